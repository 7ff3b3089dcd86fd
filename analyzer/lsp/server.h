// The language server: one thread reads and dispatches messages in order, one worker
// thread analyzes changed documents (debounced) and publishes their diagnostics or
// answers the requests that waited for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "cuda/frontend.h"
#include "engine/engine.h"
#include "lsp/actions.h"
#include "lsp/text.h"
#include "lsp/transport.h"

namespace mlsem::kernels {
class Catalog;
}

struct TSTree;
struct TSParser;

namespace mlsem::lsp {

// Whether a changed file (path or URI path) is one the configuration is read from.
bool is_config_file(const std::string& path);

// A configuration resolver as `mlsem analyze` makes one with no options (documents.cpp).
std::unique_ptr<config::Resolver> new_resolver(const Engine& engine);

using Clock = std::chrono::steady_clock;

struct TreeDeleter {
  void operator()(TSTree* t) const;
};
struct ParserDeleter {
  void operator()(TSParser* p) const;
};
using TreePtr = std::unique_ptr<TSTree, TreeDeleter>;

struct ServerOptions {
  cuda::CudaOptions cuda;
  int debounce_ms = 100;  // a change within this long of the previous one waits this long
  std::string docs_base;  // rule documentation URLs: docs_base + "<ID>.md" (findings.h)
};

// JSON-RPC and LSP error codes.
enum ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestCancelled = -32800,
};

struct Document {
  std::string uri;
  std::string path;  // what the analysis sees (decides the language)
  bool cuda = false;
  bool analyzable = true;  // a .py/.cu/.cuh file, or a python/cuda languageId
  Text text;
  // A Python document's last parse, with every change since applied to it (ts_tree_edit):
  // the next analysis reparses only what changed. Null: parse from scratch.
  TreePtr tree;
  int64_t version = 0;
  uint64_t edits = 0;  // changes so far; the analysis is fresh when analyzed == edits
  bool dirty = true;
  Clock::time_point last_change{}, due{};
  // The latest analysis, of the text after `analyzed` edits.
  uint64_t analyzed = UINT64_MAX;
  std::vector<Finding> findings;
  std::optional<std::vector<std::optional<Edit>>> rewrites;  // per finding, once asked for
  json diagnostics = json::array();
  std::string result_id;  // changes when the diagnostics change
  // The report's notes (rules the project's torch pin turns off) last logged for it: a
  // note is logged when it first appears or changes, not on every edit.
  std::string notes;
  bool fresh() const { return !dirty && analyzed == edits; }
};

// A request that waits for fresh analyses: of one document, or of all ("" uri).
struct Pending {
  json id;
  std::string method;
  json params;
  std::string uri;
};

class Server {
 public:
  Server(const Engine& engine, const kernels::Catalog* catalog, ServerOptions options, MessageReader& in,
         MessageWriter& out);
  ~Server();
  // Serves until `exit` or end of input; the process exit code.
  int run();

 private:
  enum class State { Uninitialized, Running, ShutDown };

  // server.cpp: messages and lifecycle.
  bool handle(const std::string& body);  // false on exit
  void handle_request(const json& id, const std::string& method, const json& params);
  void handle_notification(const std::string& method, const json& params);
  json initialize(const json& params);
  void initialized();
  void send_result(const json& id, json result);
  void send_error(const json& id, int code, const std::string& message);
  void notify(const std::string& method, json params);
  void request(const std::string& method, json params);
  void log(int type, const std::string& message);

  // documents.cpp: text synchronization, configuration, the worker, requests on documents.
  void did_open(const json& params);
  void did_change(const json& params);
  void did_close(const json& params);
  void did_change_watched_files(const json& params);
  void reload_config();
  // A configuration file or a file that pins torch changed (saved, or watched): forget the
  // pins and analyze every open document again.
  void project_file_changed(const std::string& path);
  // Loads the configuration for a document's path into resolver_ (lock held); the
  // configuration problems not yet shown, as showMessage/logMessage notifications.
  std::vector<json> prepare_settings(const std::string& path);
  void schedule(Document& doc, bool burst);
  void worker_loop(std::stop_token stop);
  // Requests answered from fresh analyses; answered now when possible, else queued.
  void document_request(const json& id, const std::string& method, const json& params, const std::string& uri);
  void cancel(const json& id);
  // Answers the queued requests whose documents are fresh (lock held); the messages to send.
  std::vector<json> resolve_pending();
  json answer(const Pending& p);  // lock held, documents fresh
  json hover(const Document& doc, const json& params);
  json code_actions(Document& doc, const json& params);
  json document_diagnostic_report(const Document& doc, const std::string& previous);
  json workspace_diagnostics(const json& params);
  json publish_params(const Document& doc) const;
  void send_all(const std::vector<json>& messages);

  const Engine& engine_;
  const kernels::Catalog* catalog_;
  ServerOptions options_;
  MessageReader& in_;
  MessageWriter& out_;

  // Reader thread only.
  State state_ = State::Uninitialized;
  int64_t next_request_id_ = 1;

  // Shared with the worker, under mutex_.
  std::mutex mutex_;
  std::condition_variable_any wake_;
  Encoding encoding_ = Encoding::Utf16;
  bool pull_ = false;           // diagnostics pulled by the client, else pushed
  bool refresh_support_ = false;
  bool watch_registration_ = false;
  bool trace_ = false;          // $/logTrace the analysis times (initialize's trace, $/setTrace)
  std::filesystem::path root_;
  // Settings per document as `mlsem analyze` resolves them (analyzer/config): the
  // nearest mlsem.toml / [tool.mlsem] above the file. Replaced when a configuration changes.
  std::unique_ptr<config::Resolver> resolver_;
  size_t config_errors_shown_ = 0;
  uint64_t generation_ = 0;     // result ids: "<generation>"
  uint64_t scheduled_ = 0;      // counts schedule() calls: a waiting worker looks again
  std::map<std::string, Document> docs_;
  // Worker thread only: reparses documents from their edited trees.
  std::unique_ptr<TSParser, ParserDeleter> parser_;
  std::vector<Pending> pending_;
  std::jthread worker_;
};

}  // namespace mlsem::lsp
