// Message dispatch and the lifecycle: initialize, initialized, shutdown, exit.
#include "lsp/server.h"

#include "driver/driver.h"

namespace mlsem::lsp {

Server::Server(const Engine& engine, const kernels::Catalog* catalog, ServerOptions options, MessageReader& in,
               MessageWriter& out)
    : engine_(engine), catalog_(catalog), options_(std::move(options)), in_(in), out_(out) {
  resolver_ = new_resolver(engine_);
  worker_ = std::jthread([this](std::stop_token stop) { worker_loop(stop); });
}

Server::~Server() {
  worker_.request_stop();
  wake_.notify_all();
}

int Server::run() {
  std::string body;
  while (true) {
    MessageReader::Status status = in_.next(body);
    if (status == MessageReader::Status::End) break;
    if (status == MessageReader::Status::BadHeader) {
      log(1, "mlsem: skipped a message with a malformed header");
      continue;
    }
    if (!handle(body)) break;
  }
  worker_.request_stop();
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  return state_ == State::ShutDown ? 0 : 1;
}

void Server::send_result(const json& id, json result) {
  out_.write({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

void Server::send_error(const json& id, int code, const std::string& message) {
  out_.write({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
}

void Server::notify(const std::string& method, json params) {
  out_.write({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::request(const std::string& method, json params) {
  out_.write({{"jsonrpc", "2.0"}, {"id", "mlsem-" + std::to_string(next_request_id_++)}, {"method", method},
              {"params", std::move(params)}});
}

void Server::log(int type, const std::string& message) {
  notify("window/logMessage", {{"type", type}, {"message", message}});
}

void Server::send_all(const std::vector<json>& messages) {
  for (const json& m : messages) out_.write(m);
}

bool Server::handle(const std::string& body) {
  json message = json::parse(body, nullptr, false);
  if (message.is_discarded()) {
    send_error(nullptr, kParseError, "parse error: the message is not JSON");
    return true;
  }
  if (!message.is_object()) {
    send_error(nullptr, kInvalidRequest, "invalid request: expected a JSON object");
    return true;
  }
  auto id_it = message.find("id");
  bool has_id = id_it != message.end();
  json id = nullptr;
  if (has_id && (id_it->is_number_integer() || id_it->is_string())) id = *id_it;
  auto version = message.find("jsonrpc");
  auto method_it = message.find("method");
  if (version == message.end() || *version != "2.0") {
    if (has_id || method_it == message.end()) send_error(id, kInvalidRequest, "invalid request: jsonrpc must be \"2.0\"");
    return true;
  }
  if (method_it == message.end()) {
    // A response to one of our requests (registerCapability, refresh): nothing to do.
    if (has_id && (message.contains("result") || message.contains("error"))) return true;
    send_error(id, kInvalidRequest, "invalid request: no method");
    return true;
  }
  if (!method_it->is_string()) {
    send_error(id, kInvalidRequest, "invalid request: method must be a string");
    return true;
  }
  if (has_id && id.is_null()) {
    send_error(nullptr, kInvalidRequest, "invalid request: id must be an integer or a string");
    return true;
  }
  std::string method = *method_it;
  json params = message.value("params", json::object());
  if (!params.is_object() && !params.is_array()) {
    if (has_id) send_error(id, kInvalidParams, "invalid params: expected an object or an array");
    return true;
  }

  if (!has_id) {
    if (method == "exit") return false;
    if (state_ != State::Running) return true;  // notifications before initialize or after shutdown are dropped
    try {
      handle_notification(method, params);
    } catch (const json::exception& e) {
      log(1, "mlsem: bad params for " + method + ": " + e.what());
    }
    return true;
  }
  try {
    handle_request(id, method, params);
  } catch (const json::exception& e) {
    send_error(id, kInvalidParams, "invalid params for " + method + ": " + e.what());
  } catch (const std::exception& e) {
    send_error(id, kInternalError, "internal error in " + method + ": " + e.what());
  }
  return true;
}

void Server::handle_request(const json& id, const std::string& method, const json& params) {
  if (state_ == State::Uninitialized && method != "initialize") {
    send_error(id, kServerNotInitialized, "server not initialized: send initialize first");
    return;
  }
  if (state_ == State::ShutDown) {
    send_error(id, kInvalidRequest, "invalid request: the server is shut down");
    return;
  }
  if (method == "initialize") {
    if (state_ != State::Uninitialized) {
      send_error(id, kInvalidRequest, "invalid request: initialize was already sent");
      return;
    }
    json result = initialize(params);
    state_ = State::Running;
    send_result(id, std::move(result));
  } else if (method == "shutdown") {
    state_ = State::ShutDown;
    send_result(id, nullptr);
  } else if (method == "textDocument/hover" || method == "textDocument/codeAction" ||
             method == "textDocument/diagnostic") {
    document_request(id, method, params, params.at("textDocument").at("uri").get<std::string>());
  } else if (method == "workspace/diagnostic") {
    document_request(id, method, params, "");
  } else {
    send_error(id, kMethodNotFound, "method not found: " + method);
  }
}

void Server::handle_notification(const std::string& method, const json& params) {
  if (method == "initialized") initialized();
  else if (method == "textDocument/didOpen") did_open(params);
  else if (method == "textDocument/didChange") did_change(params);
  else if (method == "textDocument/didClose") did_close(params);
  else if (method == "textDocument/didSave") {
    project_file_changed(path_from_uri(params.at("textDocument").at("uri").get<std::string>()));
  } else if (method == "workspace/didChangeWatchedFiles") did_change_watched_files(params);
  else if (method == "$/cancelRequest") cancel(params.at("id"));
  else if (method == "$/setTrace") {
    std::lock_guard lock(mutex_);
    trace_ = params.at("value").get<std::string>() != "off";
  }
  // Other notifications ($/setTrace, workspace/didChangeConfiguration, ...) are ignored.
}

json Server::initialize(const json& params) {
  const json& caps = params.value("capabilities", json::object());
  json general = caps.contains("general") ? caps["general"] : json::object();
  // Position encodings: utf-8 when the client offers it (no conversion), else utf-32,
  // else the mandatory utf-16.
  Encoding encoding = Encoding::Utf16;
  if (general.contains("positionEncodings") && general["positionEncodings"].is_array()) {
    std::set<std::string> offered;
    for (const json& e : general["positionEncodings"])
      if (e.is_string()) offered.insert(e.get<std::string>());
    if (offered.contains("utf-8")) encoding = Encoding::Utf8;
    else if (offered.contains("utf-32")) encoding = Encoding::Utf32;
  }
  json options = params.contains("initializationOptions") && params["initializationOptions"].is_object()
                     ? params["initializationOptions"]
                     : json::object();
  bool pull = caps.contains("textDocument") && caps["textDocument"].is_object() && caps["textDocument"].contains("diagnostic");
  if (options.contains("diagnosticMode") && options["diagnosticMode"].is_string())
    pull = options["diagnosticMode"] == "pull";
  if (options.contains("debounceMs") && options["debounceMs"].is_number_integer())
    options_.debounce_ms = std::clamp(options["debounceMs"].get<int>(), 0, 5000);
  std::string docs_base;
  if (options.contains("docsBaseUrl") && options["docsBaseUrl"].is_string() && !options["docsBaseUrl"].get<std::string>().empty()) {
    docs_base = options["docsBaseUrl"].get<std::string>();
    if (!docs_base.ends_with('/')) docs_base += '/';
  }

  std::filesystem::path root;
  if (params.contains("workspaceFolders") && params["workspaceFolders"].is_array() && !params["workspaceFolders"].empty())
    root = path_from_uri(params["workspaceFolders"][0].value("uri", ""));
  if (root.empty() && params.contains("rootUri") && params["rootUri"].is_string())
    root = path_from_uri(params["rootUri"].get<std::string>());
  if (root.empty() && params.contains("rootPath") && params["rootPath"].is_string())
    root = params["rootPath"].get<std::string>();

  {
    std::lock_guard lock(mutex_);
    encoding_ = encoding;
    pull_ = pull;
    if (!docs_base.empty()) options_.docs_base = docs_base;
    const json ws = caps.value("workspace", json::object());
    refresh_support_ = ws.contains("diagnostics") && ws["diagnostics"].value("refreshSupport", false);
    watch_registration_ =
        ws.contains("didChangeWatchedFiles") && ws["didChangeWatchedFiles"].value("dynamicRegistration", false);
    root_ = root;
    trace_ = params.contains("trace") && params["trace"].is_string() && params["trace"] != "off";
  }

  json capabilities = {
      {"positionEncoding", encoding_name(encoding)},
      {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
      {"hoverProvider", true},
      {"codeActionProvider", {{"codeActionKinds", {"quickfix", "source.fixAll.mlsem"}}, {"resolveProvider", false}}},
  };
  if (pull)
    capabilities["diagnosticProvider"] = {
        {"identifier", "mlsem"}, {"interFileDependencies", false}, {"workspaceDiagnostics", true}};
  return {{"capabilities", capabilities}, {"serverInfo", {{"name", "mlsem"}, {"version", std::string(version())}}}};
}

void Server::initialized() {
  bool watch = false;
  {
    std::lock_guard lock(mutex_);
    watch = watch_registration_;
  }
  if (watch)
    request("client/registerCapability",
            {{"registrations",
              {{{"id", "mlsem-config-files"},
                {"method", "workspace/didChangeWatchedFiles"},
                {"registerOptions",
                 {{"watchers",
                   {{{"globPattern", "**/mlsem.toml"}},
                    {{"globPattern", "**/pyproject.toml"}},
                    // What pins the torch the project targets (rules whose fix needs a newer one are off).
                    // (driver::reads_torch_pin's files).
                    {{"globPattern", "**/requirements*.txt"}},
                    {{"globPattern", "**/setup.{py,cfg}"}},
                    {{"globPattern", "**/{environment,conda}*.{yml,yaml}"}},
                    {{"globPattern", "**/.github/workflows/*.{yml,yaml}"}},
                    {{"globPattern", "**/.circleci/config.{yml,yaml}"}},
                    {{"globPattern", "**/{.travis,.gitlab-ci,azure-pipelines}.yml"}},
                    {{"globPattern", "**/{README,Readme,readme,INSTALL,Install,install}{,.md,.rst,.txt,.markdown}"}}}}}}}}}});
}

}  // namespace mlsem::lsp
