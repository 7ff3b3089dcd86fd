// The base protocol's framing: messages split across reads, malformed headers skipped
// with resynchronization, a message cut short by the end of input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "lsp/transport.h"

namespace mlsem::lsp {
namespace {

// Feeds `input` through a pipe (in small pieces) and collects what the reader yields.
std::vector<std::string> read_all(const std::string& input, size_t piece = 3) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    for (size_t i = 0; i < input.size(); i += piece) {
      ssize_t n = write(fds[1], input.data() + i, std::min(piece, input.size() - i));
      (void)n;
    }
    close(fds[1]);
  });
  MessageReader reader(fds[0]);
  std::vector<std::string> out;
  std::string body;
  while (true) {
    MessageReader::Status s = reader.next(body);
    if (s == MessageReader::Status::End) break;
    out.push_back(s == MessageReader::Status::Message ? body : "<bad header>");
  }
  writer.join();
  close(fds[0]);
  return out;
}

std::string frame(const std::string& body) { return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body; }

TEST(LspTransport, MessagesSplitAcrossReads) {
  std::string body = R"({"jsonrpc":"2.0","method":"x","params":{"t":"中\n😀"}})";
  auto out = read_all(frame(body) + "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + frame("{}"), 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], body);
  EXPECT_EQ(out[1], "{}");
}

TEST(LspTransport, MalformedHeadersAreSkippedAndTheNextMessageGetsThrough) {
  std::string input = "Content-Length: abc\r\n\r\n" + frame("1") + "garbage\r\n\r\n" + frame("2") +
                      "Content-Length: 99999999999\r\n\r\n" + frame("3") + "junk glued to a header" + frame("4") +
                      "\r\n\r\n" + frame("5");
  auto out = read_all(input);
  EXPECT_EQ(out, (std::vector<std::string>{"<bad header>", "1", "<bad header>", "2", "<bad header>", "3", "4", "5"}));
}

TEST(LspTransport, AMessageCutShortByTheEndOfInputIsDropped) {
  auto out = read_all(frame("{}") + "Content-Length: 50\r\n\r\n{\"jsonrpc\"");
  EXPECT_EQ(out, (std::vector<std::string>{"{}"}));
}

TEST(LspTransport, WriterFramesWithTheByteLength) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  MessageWriter writer(fds[1]);
  ASSERT_TRUE(writer.write(json{{"m", "中"}}));
  close(fds[1]);
  char buf[256];
  ssize_t n = read(fds[0], buf, sizeof buf);
  close(fds[0]);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "Content-Length: 11\r\n\r\n{\"m\":\"中\"}");
}

}  // namespace
}  // namespace mlsem::lsp
