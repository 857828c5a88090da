// The test binary's main: doctest's, after the settings every test runs under.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Every parallel nest of a multi-threaded kernel is split over its threads, however small (the
  // default runs small nests on the calling thread): the tests' small shapes then exercise the
  // split (a test of the default unsets it).
  setenv("SGRAPH_PARALLEL_WORK", "0", /*overwrite=*/0);
  doctest::Context context(argc, argv);
  return context.run();
}
