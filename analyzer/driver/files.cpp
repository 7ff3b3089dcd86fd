#include "driver/files.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>

#include "driver/driver.h"

namespace fs = std::filesystem;

namespace mlsem::driver {
namespace {

// Directory names never walked into: VCS metadata, virtual environments, caches,
// installed packages and JavaScript dependencies (build*/ is tested separately).
constexpr std::array<std::string_view, 11> kSkippedNames = {
    ".git", ".hg", ".svn", "venv", ".venv", "env", "node_modules",
    "__pycache__", ".tox", ".mypy_cache", "site-packages"};

std::string message_of(int errno_value) {
  return std::error_code(errno_value, std::generic_category()).message();
}

// Offset of the first byte that does not start a well-formed UTF-8 sequence (no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t first_invalid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    // Eight ASCII bytes at a time (most source files are all ASCII).
    uint64_t word;
    while (i + 8 <= text.size() && (std::memcpy(&word, text.data() + i, 8), (word & 0x8080808080808080ull) == 0)) i += 8;
    if (i >= text.size()) break;
    unsigned char lead = text[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code_point, smallest;
    if ((lead & 0xE0) == 0xC0) {
      length = 2, code_point = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code_point = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code_point = lead & 0x07, smallest = 0x10000;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      unsigned char next = text[i + k];
      if ((next & 0xC0) != 0x80) return i;
      code_point = (code_point << 6) | (next & 0x3F);
    }
    if (code_point < smallest || code_point > 0x10FFFF ||
        (code_point >= 0xD800 && code_point <= 0xDFFF))
      return i;
    i += length;
  }
  return std::string_view::npos;
}

// 1-based line and byte column of an offset.
FileError error_at(const SourceFile& file, size_t offset, std::string message) {
  std::string_view before = std::string_view(file.text).substr(0, offset);
  auto line = static_cast<uint32_t>(std::count(before.begin(), before.end(), '\n') + 1);
  size_t line_start = before.rfind('\n');
  line_start = line_start == std::string_view::npos ? 0 : line_start + 1;
  return {file.path, std::move(message), line, static_cast<uint32_t>(offset - line_start + 1)};
}

std::string too_large(uintmax_t size, size_t limit) {
  return "file too large (" + std::to_string(size) + " bytes; the limit is " +
         std::to_string(limit) + "), not analyzed";
}

struct Collector {
  std::vector<std::string> files;
  std::vector<FileError>& errors;
  std::set<std::string> seen;  // canonical paths, so a file named twice is analyzed once
  const Exclusion& excluded;

  void add(const fs::path& path, const std::string& shown) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(path, ec);
    if (!seen.insert(ec ? fs::absolute(path).lexically_normal().string() : key.string()).second)
      return;
    files.push_back(shown);
  }

  // Symlinked directories are not followed (no loops, no walking out of the tree);
  // symlinked files are analyzed.
  void walk(const fs::path& dir, const fs::path& shown) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      errors.push_back({shown.generic_string(), "cannot read directory: " + ec.message()});
      return;
    }
    std::vector<fs::directory_entry> entries;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) {
        errors.push_back({shown.generic_string(), "cannot read directory: " + ec.message()});
        break;
      }
      entries.push_back(*it);
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
    for (const fs::directory_entry& entry : entries) {
      std::string name = entry.path().filename().string();
      fs::path child_shown = (shown / name).lexically_normal();
      fs::file_status link_status = entry.symlink_status(ec);
      if (ec) continue;
      if (fs::is_directory(link_status)) {
        if (!is_skipped_directory(entry.path().string(), name) && !(excluded && excluded(entry.path(), true)))
          walk(entry.path(), child_shown);
        continue;
      }
      if (language_of(name).empty()) continue;
      if (excluded && excluded(entry.path(), false)) continue;
      bool regular = fs::is_symlink(link_status) ? fs::is_regular_file(entry.status(ec))
                                                 : fs::is_regular_file(link_status);
      if (regular) add(entry.path(), child_shown.generic_string());
    }
  }
};

}  // namespace

std::string_view language_of(std::string_view path) {
  if (path.ends_with(".py") || path.ends_with(".ipynb")) return "python";
#ifdef MLSEM_WITH_CUDA
  if (path.ends_with(".cu") || path.ends_with(".cuh")) return "cuda";
#endif
  return "";
}

bool is_skipped_directory(const std::string& dir_path, std::string_view name) {
  if (std::find(kSkippedNames.begin(), kSkippedNames.end(), name) != kSkippedNames.end())
    return true;
  if (name.starts_with("build")) return true;
  std::error_code ec;
  return fs::exists(fs::path(dir_path) / "pyvenv.cfg", ec);  // a virtual environment of any name
}

std::vector<std::string> collect_files(const std::vector<std::string>& paths,
                                      std::vector<FileError>& errors, const Exclusion& excluded) {
  Collector collector{{}, errors, {}, excluded};
  for (const std::string& named : paths) {
    std::error_code ec;
    fs::file_status status = fs::status(named, ec);  // a named symlink is followed
    if (status.type() == fs::file_type::not_found) {
      errors.push_back({named, "no such file or directory"});
    } else if (ec) {
      errors.push_back({named, "cannot access: " + ec.message()});
    } else if (fs::is_directory(status)) {
      collector.walk(named, fs::path(named));  // named explicitly: walked even if it would be skipped
    } else if (!language_of(named).empty()) {
      collector.add(named, named);
    } else if (named.ends_with(".cu") || named.ends_with(".cuh")) {
      errors.push_back({named, kNoCuda});
    } else {
      errors.push_back({named, "not a Python, notebook or CUDA source file (.py, .ipynb, .cu, .cuh), not analyzed"});
    }
  }
  return std::move(collector.files);
}

std::optional<FileError> check_text(const SourceFile& file, size_t max_file_bytes) {
  if (file.text.size() > max_file_bytes) return FileError{file.path, too_large(file.text.size(), max_file_bytes)};
  if (size_t nul = file.text.find('\0'); nul != std::string::npos)
    return error_at(file, nul, "binary file (contains a NUL byte), not analyzed");
  if (size_t bad = first_invalid_utf8(file.text); bad != std::string_view::npos)
    return error_at(file, bad, "not valid UTF-8 text, not analyzed");
  return std::nullopt;
}

}  // namespace mlsem::driver

namespace mlsem {

std::optional<FileError> read_source_file(const std::string& path, size_t max_file_bytes,
                                          SourceFile& out) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) return FileError{path, "no such file or directory"};
  if (ec) return FileError{path, "cannot access: " + ec.message()};
  // Opening a FIFO or device would block or never end.
  if (!fs::is_regular_file(status)) return FileError{path, "not a regular file, not analyzed"};
  uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_file_bytes) return FileError{path, driver::too_large(size, max_file_bytes)};

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!stream) return FileError{path, "cannot read: " + driver::message_of(errno)};
  out.path = path;
  out.text.clear();
  char buffer[1 << 16];
  // Read at most one byte past the limit: the file may have grown since file_size.
  while (out.text.size() <= max_file_bytes) {
    size_t got = std::fread(buffer, 1, sizeof buffer, stream.get());
    out.text.append(buffer, got);
    if (got < sizeof buffer) break;
  }
  if (std::ferror(stream.get())) return FileError{path, "cannot read: " + driver::message_of(errno)};
  return driver::check_text(out, max_file_bytes);
}

}  // namespace mlsem
