#include "lsp/transport.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>

namespace mlsem::lsp {

bool MessageReader::fill() {
  if (eof_) return false;
  if (pos_ > 0 && pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  char chunk[65536];
  while (true) {
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    eof_ = true;
    return false;
  }
}

bool MessageReader::read_line(std::string& line) {
  while (true) {
    size_t nl = buffer_.find('\n', pos_);
    if (nl != std::string::npos) {
      line.assign(buffer_, pos_, nl - pos_);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      pos_ = nl + 1;
      return true;
    }
    // A header line longer than 8 KiB is garbage: drop it and keep looking.
    if (buffer_.size() - pos_ > 8192) {
      pos_ = buffer_.size();
      line = "\x01";  // not a header, not empty
      return true;
    }
    if (!fill()) return false;
  }
}

namespace {

bool iequals_prefix(std::string_view line, std::string_view name) {
  if (line.size() < name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  return true;
}

size_t find_content_length(const std::string& line) {
  for (size_t k = line.find_first_of("Cc"); k != std::string::npos; k = line.find_first_of("Cc", k + 1))
    if (iequals_prefix(std::string_view(line).substr(k), "content-length:")) return k;
  return std::string::npos;
}

}  // namespace

MessageReader::Status MessageReader::next(std::string& body) {
  std::string line;
  while (true) {
    // A header block: lines up to an empty one.
    bool any = false, bad = false;
    long long length = -1;
    while (true) {
      if (!read_line(line)) return Status::End;
      if (line.empty()) {
        if (!any) continue;  // blank lines between messages are tolerated
        break;
      }
      // Garbage glued to a header ("...}Content-Length: 12"): resynchronize on the header.
      if (size_t k = find_content_length(line); k != std::string::npos && k > 0) line.erase(0, k);
      any = true;
      if (iequals_prefix(line, "content-length:")) {
        std::string_view v(line);
        v.remove_prefix(15);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
        long long n = -1;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size() || n < 0) bad = true;
        else length = n;
      } else if (line.find(':') == std::string::npos) {
        bad = true;  // not a header line at all
      }
    }
    if (bad || length < 0 || static_cast<unsigned long long>(length) > max_body_) return Status::BadHeader;
    size_t n = static_cast<size_t>(length);
    while (buffer_.size() - pos_ < n)
      if (!fill()) return Status::End;
    body.assign(buffer_, pos_, n);
    pos_ += n;
    return Status::Message;
  }
}

bool MessageWriter::write(const json& message) {
  std::string body = message.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::lock_guard lock(mutex_);
  if (broken_) return false;
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace mlsem::lsp
