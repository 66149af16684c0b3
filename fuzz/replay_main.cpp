// A main for the fuzz targets in the ordinary (gcc, no libFuzzer) build: runs
// LLVMFuzzerTestOneInput once on every file of the directories (or files)
// given, so ctest replays the seed corpus and every committed regression
// (fuzz/README.md). A crash in the library fails the test as it would under
// the fuzzer. Single-threaded.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int Replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot open %s\n", file.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int failed = 0, count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || name == "README.md" || name[0] == '.') continue;
        failed += Replay(entry.path());
        ++count;
      }
    } else if (std::filesystem::exists(arg)) {
      failed += Replay(arg);
      ++count;
    }
  }
  std::printf("replay: %d inputs\n", count);
  return failed == 0 && count > 0 ? 0 : 1;
}
