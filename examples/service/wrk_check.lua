-- wrk script: sends the requests of a data file written by `sgraph_load --write-wrk FILE`
-- (several input shapes, in phases over time) and checks every response against the
-- interpreter's outputs stored there. Responses are matched to requests by the echoed "id".
--   SGRAPH_WRK_DATA=FILE wrk -t2 -c16 -d60s --latency -s examples/service/wrk_check.lua URL
-- Prints the checked count, errors and mismatches after wrk's own summary; exits non-zero
-- when any response was wrong (wrk counts non-2xx responses itself).

local data = dofile(os.getenv("SGRAPH_WRK_DATA") or error("set SGRAPH_WRK_DATA"))
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  checked, mismatches, bad_status, first_problem = 0, 0, 0, ""
  counter = 0
  start = os.time()
  wrk.method = "POST"
  wrk.path = data.path
  wrk.headers["Content-Type"] = "application/json"
  by_id = {}
  for _, phase in ipairs(data.phases) do
    for _, r in ipairs(phase) do
      local values = {}
      for tok in r.expected:gmatch("[^,]+") do values[#values + 1] = tonumber(tok) end
      by_id[r.id] = values
    end
  end
end

function request()
  local elapsed, k = os.time() - start, 1
  while k < #data.phases and elapsed >= data.phase_ends[k] do k = k + 1 end
  local phase = data.phases[k]
  counter = counter + 1
  local r = phase[(counter % #phase) + 1]
  return wrk.format(nil, nil, nil, r.body)
end

local function problem(what)
  mismatches = mismatches + 1
  if first_problem == "" then first_problem = what end
end

function response(status, headers, body)
  if status ~= 200 then
    bad_status = bad_status + 1
    if first_problem == "" then first_problem = "HTTP " .. status .. ": " .. body:sub(1, 200) end
    return
  end
  checked = checked + 1
  local id = body:match('"id":"([^"]*)"')
  local want = id and by_id[id]
  if not want then return problem("no request with id " .. tostring(id)) end
  local i = 0
  for values in body:gmatch('"data":%[(.-)%]') do
    for tok in values:gmatch("[^,]+") do
      i = i + 1
      local got, w = tonumber(tok), want[i]
      if got == nil or w == nil or w ~= w or math.abs(got - w) > data.atol + data.rtol * math.abs(w) then
        return problem("request " .. id .. ", element " .. i .. ": got " .. tok .. ", want " .. tostring(w))
      end
    end
  end
  if i ~= #want then problem("request " .. id .. ": " .. i .. " values, want " .. #want) end
end

function done(summary, latency, requests)
  local c, m, b, first = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    c = c + t:get("checked")
    m = m + t:get("mismatches")
    b = b + t:get("bad_status")
    if first == "" then first = t:get("first_problem") end
  end
  io.write(string.format("checked %d responses: %d mismatches, %d non-200, %d socket errors\n", c, m, b,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    latency.max / 1000))
  io.write(string.format("requests/s: %.1f\n", summary.requests / (summary.duration / 1e6)))
  if first ~= "" then io.write("first problem: " .. first .. "\n") end
  if m > 0 or b > 0 then os.exit(1) end
end
