// ThreadSanitizer suppressions of the runtime_tests binary: the entries of
// tests/tsan.supp (keep the two equal; that file says why each is there), so
// that `ctest` in a -DOFL_SANITIZER=thread build needs no TSAN_OPTIONS. TSan
// reads this function at start-up; other builds never call it. Also checks
// that the file still lists what the binary suppresses.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

extern "C" const char* __tsan_default_suppressions() {
  return "race:libdnnl.so\nrace:libgloo.so\n";
}

namespace ofl {
namespace {

std::set<std::string> Entries(std::istream& in) {
  std::set<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') out.insert(line);
  }
  return out;
}

TEST(TsanSuppressionsTest, BinaryAndFileListTheSameLibraries) {
  const std::string path = std::string(OFL_TESTS_DIR) + "/tsan.supp";
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << path;
  std::istringstream built(__tsan_default_suppressions());
  EXPECT_EQ(Entries(file), Entries(built));
}

}  // namespace
}  // namespace ofl
