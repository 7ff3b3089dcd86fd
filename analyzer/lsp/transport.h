// JSON-RPC 2.0 over a byte stream with LSP's base protocol framing:
// "Content-Length: N\r\n" (other headers ignored) "\r\n" then N bytes of JSON.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace mlsem::lsp {

using json = nlohmann::json;

// Reads framed messages from a file descriptor. A header block without a usable
// Content-Length is skipped (the reader resynchronizes on the next header block).
class MessageReader {
 public:
  explicit MessageReader(int fd, size_t max_body = 64u << 20) : fd_(fd), max_body_(max_body) {}

  enum class Status { Message, BadHeader, End };
  // Next message body in `body`; BadHeader when a header block was malformed (the
  // caller may log it); End at end of input (a message cut short by it is dropped).
  Status next(std::string& body);

 private:
  bool fill();                        // reads more bytes; false at end of input
  bool read_line(std::string& line);  // one header line without its "\r\n"
  int fd_;
  size_t max_body_;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// Writes framed messages to a file descriptor; safe to call from several threads.
class MessageWriter {
 public:
  explicit MessageWriter(int fd) : fd_(fd) {}
  // False once the other end is gone.
  bool write(const json& message);

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

}  // namespace mlsem::lsp
