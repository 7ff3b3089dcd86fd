// The language server: the bytes become its standard input, read through the framing
// (MessageReader) and dispatched by the server until exit or end of input, with the
// analysis worker running (no debounce). Byte 0 picks the form of the rest:
//   bit 0 clear: the raw byte stream (framing and resynchronization);
//   bit 0 set:   message bodies separated by 0x1e, each framed with its exact length,
//                after an `initialize` request when bit 1 is set (the dispatcher).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "engine/engine.h"
#include "fuzz.h"
#include "lsp/server.h"
#include "lsp/transport.h"

namespace mlsem::fuzz {

int lsp(const uint8_t* data, size_t size) {
  static const int sink = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  Bytes in(data, size);
  const uint8_t mode = in.byte();
  std::string_view rest = in.rest();
  std::string stream;
  if (!(mode & 1)) {
    stream.assign(rest);
  } else {
    auto frame = [&](std::string_view body) {
      stream += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
      stream += body;
    };
    if (mode & 2)
      frame(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{},"rootUri":null}})");
    for (size_t start = 0; start <= rest.size();) {
      size_t end = rest.find('\x1e', start);
      if (end == std::string_view::npos) end = rest.size();
      frame(rest.substr(start, end - start));
      start = end + 1;
    }
  }
  int fd = ::memfd_create("mlsem-fuzz-lsp", MFD_CLOEXEC);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < stream.size();) {
    ssize_t n = ::write(fd, stream.data() + done, stream.size() - done);
    if (n <= 0) std::abort();
    done += size_t(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  {
    lsp::MessageReader reader(fd, 1u << 20);
    lsp::MessageWriter writer(sink);
    lsp::ServerOptions options;
    options.debounce_ms = 0;
    options.cuda.cuda_path = "none";
    lsp::Server server(engine(), nullptr, options, reader, writer);
    (void)server.run();
  }
  ::close(fd);
  return 0;
}

}  // namespace mlsem::fuzz
