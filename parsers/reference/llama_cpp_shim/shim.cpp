// llama-cpp-worker: llama.cpp's chat-output parser (common/chat.h) served over the harness worker protocol
// (docs/worker-protocol.md): one JSON request per line on stdin, one JSON response per line on stdout.
//
// Usage: llama-cpp-worker --template FORMAT=PATH [--template ...] [--reasoning FORMAT=on|off|auto ...]
//                         [--chat-template-kwargs FORMAT=JSON ...] [--verbose]
//
// Each harness format is bound to a chat template file; llama.cpp's own template detection decides which
// parser it builds (the Gemma 4 template gives COMMON_CHAT_FORMAT_PEG_GEMMA4). Per format, --reasoning and
// --chat-template-kwargs are llama-server's options of the same names (-rea, --chat-template-kwargs), as a
// server started for that one model would have them. Requests are served the way
// llama-server serves /v1/chat/completions (tools/server/server-common.cpp: oaicompat_chat_params_parse;
// tools/server/server-task.cpp: task_result_state::update_chat_msg):
//   common_chat_templates_apply(tmpls, inputs) -> common_chat_params (format, generation_prompt, parser)
//   common_chat_parser_params built from it      -> common_chat_parse(text, is_partial, params)
//   streaming: re-parse the accumulated text with is_partial=true on every chunk and emit
//              common_chat_msg_diff::compute_diffs(previous, current); finish parses with is_partial=false.

#include "build-info.h"
#include "chat.h"
#include "log.h"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef WORKER_VERSION
#define WORKER_VERSION "unknown"
#endif

using json = nlohmann::ordered_json;

static const int PROTOCOL_VERSION = 1;

// ---------------------------------------------------------------------------------------------------------
// Errors and output
// ---------------------------------------------------------------------------------------------------------

// A request the worker cannot serve; `type` is the protocol error type.
struct request_error : std::runtime_error {
    std::string type;
    request_error(std::string type, const std::string & message) : std::runtime_error(message), type(std::move(type)) {}
};

static request_error parser_error(const std::exception & e) {
    std::string message = e.what();
    if (message.size() > 2000) {
        message.resize(2000);
    }
    return request_error("parser_error", message);
}

// Protocol lines go to a private copy of the original stdout; fd 1 itself is pointed at stderr so that
// anything the library prints (its LOG() goes to stdout) cannot corrupt the protocol stream.
static FILE * protocol_out = nullptr;

static void redirect_stdout() {
    int fd = dup(STDOUT_FILENO);
    protocol_out = fd >= 0 ? fdopen(fd, "w") : nullptr;
    if (!protocol_out) {
        protocol_out = stdout;
        return;
    }
    fflush(stdout);
    dup2(STDERR_FILENO, STDOUT_FILENO);
}

static void write_line(const json & response) {
    // replace invalid UTF-8 rather than throw: a response is always written
    std::string line = response.dump(-1, ' ', false, json::error_handler_t::replace);
    line += '\n';
    fwrite(line.data(), 1, line.size(), protocol_out);
    fflush(protocol_out);
}

// ---------------------------------------------------------------------------------------------------------
// Request fields
// ---------------------------------------------------------------------------------------------------------

static std::string string_field(const json & request, const char * name) {
    auto it = request.find(name);
    if (it == request.end() || !it->is_string()) {
        throw request_error("bad_request", std::string("field '") + name + "' must be a string");
    }
    return it->get<std::string>();
}

// `prefix`: a string; absent or null means "".
static std::string prefix_field(const json & request) {
    auto it = request.find("prefix");
    if (it == request.end() || it->is_null()) {
        return "";
    }
    if (!it->is_string()) {
        throw request_error("bad_request", "field 'prefix' must be a string or null");
    }
    return it->get<std::string>();
}

// `tools`: OpenAI-style declarations; absent or null means none.
static json tools_field(const json & request) {
    auto it = request.find("tools");
    if (it == request.end() || it->is_null()) {
        return json();
    }
    if (!it->is_array()) {
        throw request_error("bad_request", "field 'tools' must be an array or null");
    }
    return *it;
}

static bool ends_with(const std::string & s, const std::string & suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---------------------------------------------------------------------------------------------------------
// Parser setup: what llama-server derives from the request before generating
// ---------------------------------------------------------------------------------------------------------

// The parser parameters for one (format, tools, prefix), plus what was noticed while deriving them.
struct parser_setup {
    common_chat_parser_params params;
    std::vector<std::string>  diagnostics;
};

// The template inputs llama-server builds for a request with one user message and these tools
// (oaicompat_chat_params_parse with the server defaults: tool_choice auto, reasoning_format deepseek,
// parallel_tool_calls from the template's caps).
static common_chat_templates_inputs server_inputs(const common_chat_templates * tmpls, const json & tools,
                                                  const std::map<std::string, std::string> & kwargs) {
    common_chat_msg user;
    user.role    = "user";
    user.content = "Please help me with this request, using the tools if they are useful.";

    common_chat_templates_inputs inputs;
    inputs.messages              = { user };
    inputs.tools                 = common_chat_tools_parse_oaicompat(common_json::parse(tools.dump()));
    inputs.tool_choice           = COMMON_CHAT_TOOL_CHOICE_AUTO;
    inputs.use_jinja             = true;
    inputs.add_generation_prompt = true;
    inputs.reasoning_format      = COMMON_REASONING_FORMAT_DEEPSEEK;
    inputs.parallel_tool_calls   = common_chat_templates_get_caps(tmpls)["supports_parallel_tool_calls"];
    inputs.chat_template_kwargs  = kwargs;  // --chat-template-kwargs (values are JSON texts, as the server keeps them)
    return inputs;
}

// enable_thinking for one apply; a kwarg of that name (the server's --reasoning on|off puts one there) is set
// alike, as a client's chat_template_kwargs would override it.
static void set_thinking(common_chat_templates_inputs & inputs, bool thinking) {
    inputs.enable_thinking = thinking;
    auto it = inputs.chat_template_kwargs.find("enable_thinking");
    if (it != inputs.chat_template_kwargs.end()) {
        it->second = thinking ? "true" : "false";
    }
}

// Apply the template with the server's enable_thinking (`server_thinking`), then with the other setting, and keep
// the first whose generation prompt ends with the request's prefix (the text the template pre-filled after the
// generation prompt): a prefix only the other setting produces stands for a client that sent
// chat_template_kwargs {"enable_thinking": ...}. For Gemma 4 the thinking-off prompt ends with
// "<|channel>thought\n<channel|>"; an empty prefix keeps the server's setting.
static common_chat_params apply_for_prefix(const common_chat_templates * tmpls, common_chat_templates_inputs inputs,
                                           bool server_thinking, const std::string & prefix,
                                           std::vector<std::string> & diagnostics) {
    for (bool thinking : { server_thinking, !server_thinking }) {
        set_thinking(inputs, thinking);
        common_chat_params params = common_chat_templates_apply(tmpls, inputs);
        if (ends_with(params.generation_prompt, prefix)) {
            return params;
        }
    }
    set_thinking(inputs, server_thinking);
    common_chat_params params = common_chat_templates_apply(tmpls, inputs);
    diagnostics.push_back("no enable_thinking setting makes the generation prompt end with the prefix; "
                          "generation prompt used: " + json(params.generation_prompt).dump());
    return params;
}

// The per-request parser parameters as llama-server sets them from the apply result (server-common.cpp sends
// chat_format, generation_prompt and chat_parser; server-schema.cpp loads them into chat_parser_params).
static common_chat_parser_params server_parser_params(const common_chat_params & chat_params) {
    common_chat_parser_params params(chat_params);  // format, generation_prompt
    params.reasoning_format     = COMMON_REASONING_FORMAT_DEEPSEEK;
    params.reasoning_in_content = false;  // only DEEPSEEK_LEGACY streams reasoning inline
    params.parse_tool_calls     = true;
    if (!chat_params.parser.empty()) {
        params.parser.load(chat_params.parser);
    }
    return params;
}

// What the parse left out, as diagnostics. common_chat_peg_parse runs the PEG parser leniently and throws
// only when it fails outright: a grammar without an end anchor (Gemma 4 with tools) stops at the first text it
// cannot match (a value written `None`, content after the last call) and the rest is dropped silently. This
// repeats the library's own parse (same effective input and flags) only to say what was dropped.
static std::vector<std::string> parse_gaps(const std::string & text, const common_chat_parser_params & params) {
    if (params.parser.empty()) {
        return {};
    }
    const std::string input = params.generation_prompt + text;
    common_peg_parse_context ctx(input, COMMON_PEG_PARSE_FLAG_LENIENT);
    auto result = params.parser.parse(ctx);
    if (result.fail() || result.end >= input.size()) {  // need_more_input is the normal end of an `until`
        return {};
    }
    size_t at   = result.end > params.generation_prompt.size() ? result.end - params.generation_prompt.size() : 0;
    std::string tail = text.substr(at);
    std::string shown = tail.size() > 200 ? tail.substr(0, 200) + "..." : tail;
    return { "llama.cpp: parsing stopped at byte " + std::to_string(at) + " of " + std::to_string(text.size()) +
             "; dropped without an error: " + json(shown).dump(-1, ' ', false, json::error_handler_t::replace) };
}

// ---------------------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------------------

static json string_or_null(const std::string & s) {
    return s.empty() ? json() : json(s);
}

static json message_json(const common_chat_msg & msg, const std::vector<std::string> & diagnostics) {
    json calls = json::array();
    for (const auto & call : msg.tool_calls) {
        calls.push_back({ { "name", call.name }, { "arguments", call.arguments } });
    }
    return {
        { "content", string_or_null(msg.content) },
        { "reasoning", string_or_null(msg.reasoning_content) },
        { "tool_calls", calls },
        { "diagnostics", diagnostics },
    };
}

// One diff as a protocol delta (the shape of server_chat_msg_diff_to_json_oaicompat, minus the ids).
static json delta_json(const common_chat_msg_diff & diff) {
    json delta = json::object();
    if (!diff.reasoning_content_delta.empty()) {
        delta["reasoning"] = diff.reasoning_content_delta;
    }
    if (!diff.content_delta.empty()) {
        delta["content"] = diff.content_delta;
    }
    if (diff.tool_call_index != std::string::npos) {
        json call = { { "index", diff.tool_call_index } };
        if (!diff.tool_call_delta.name.empty()) {
            call["name"] = diff.tool_call_delta.name;
        }
        if (!diff.tool_call_delta.arguments.empty()) {
            call["arguments"] = diff.tool_call_delta.arguments;
        }
        delta["tool_calls"] = json::array({ call });
    }
    return delta;
}

// ---------------------------------------------------------------------------------------------------------
// Streaming: task_result_state::update_chat_msg, without the HTTP response bookkeeping
// ---------------------------------------------------------------------------------------------------------

struct stream_state {
    std::shared_ptr<const parser_setup> setup;
    std::string                         generated_text;
    common_chat_msg                     chat_msg;
    std::vector<std::string>            tool_call_ids;

    // Append `chunk`, re-parse everything, return the diffs against the previous parse.
    std::vector<common_chat_msg_diff> update(const std::string & chunk, bool is_partial) {
        generated_text += chunk;
        common_chat_msg new_msg = common_chat_parse(generated_text, is_partial, setup->params);
        if (new_msg.empty()) {
            return {};
        }
        // ids are assigned before diffing, as the server does (it draws random ones; these are stable)
        new_msg.set_tool_call_ids(tool_call_ids, [this]() { return "call_" + std::to_string(tool_call_ids.size()); });
        auto diffs = common_chat_msg_diff::compute_diffs(chat_msg, new_msg);
        chat_msg   = std::move(new_msg);
        return diffs;
    }
};

static json deltas_json(const std::vector<common_chat_msg_diff> & diffs) {
    json deltas = json::array();
    for (const auto & diff : diffs) {
        json delta = delta_json(diff);
        if (!delta.empty()) {
            deltas.push_back(delta);
        }
    }
    return deltas;
}

// ---------------------------------------------------------------------------------------------------------
// The worker
// ---------------------------------------------------------------------------------------------------------

// One served format: its template and the server options it is run with.
struct format_config {
    std::string                        path;
    common_chat_templates_ptr          templates;
    std::string                        reasoning = "auto";  // llama-server --reasoning on|off|auto
    std::map<std::string, std::string> kwargs;              // llama-server --chat-template-kwargs
    bool                               server_thinking = true;
};

class worker {
  public:
    bool add_template(const std::string & format, const std::string & path) {
        std::ifstream file(path, std::ios::binary);
        if (!file) {
            fprintf(stderr, "cannot read chat template %s\n", path.c_str());
            return false;
        }
        std::stringstream src;
        src << file.rdbuf();
        try {
            formats_[format].path      = path;
            formats_[format].templates = common_chat_templates_init(/* model */ nullptr, src.str());
        } catch (const std::exception & e) {
            fprintf(stderr, "chat template %s: %s\n", path.c_str(), e.what());
            return false;
        }
        return true;
    }

    // --reasoning FORMAT=on|off|auto, as llama-server's -rea: `on` sets the enable_thinking kwarg, `off` disables
    // thinking, `auto` (the default) enables it when the template supports it.
    bool set_reasoning(const std::string & format, const std::string & value) {
        if (value != "on" && value != "off" && value != "auto") {
            fprintf(stderr, "--reasoning %s: expected on, off or auto\n", value.c_str());
            return false;
        }
        formats_[format].reasoning = value;
        return true;
    }

    // --chat-template-kwargs FORMAT=JSON: a JSON object whose values the template gets as variables.
    bool set_kwargs(const std::string & format, const std::string & text) {
        try {
            json object = json::parse(text);
            if (!object.is_object()) {
                throw std::runtime_error("not a JSON object");
            }
            for (const auto & item : object.items()) {
                formats_[format].kwargs[item.key()] = item.value().dump();
            }
        } catch (const std::exception & e) {
            fprintf(stderr, "--chat-template-kwargs %s: %s\n", text.c_str(), e.what());
            return false;
        }
        return true;
    }

    // After the options: every format needs a template; the server's enable_thinking is fixed per format
    // (server-context.cpp: enable_reasoning != 0 && common_chat_templates_support_enable_thinking).
    bool finish_setup() {
        for (auto & entry : formats_) {
            format_config & config = entry.second;
            if (!config.templates) {
                fprintf(stderr, "format %s has options but no --template\n", entry.first.c_str());
                return false;
            }
            if (config.reasoning == "on") {
                config.kwargs["enable_thinking"] = "true";
            } else if (config.reasoning == "off") {
                config.kwargs["enable_thinking"] = "false";
            }
            try {
                bool supported         = common_chat_templates_support_enable_thinking(config.templates.get());
                config.server_thinking = config.reasoning != "off" && supported;
            } catch (const std::exception & e) {
                fprintf(stderr, "chat template %s: %s\n", config.path.c_str(), e.what());
                return false;
            }
            // the server turns an "enable_thinking" kwarg into inputs.enable_thinking (server-common.cpp)
            auto it = config.kwargs.find("enable_thinking");
            if (it != config.kwargs.end() && (it->second == "true" || it->second == "false")) {
                config.server_thinking = it->second == "true";
            }
        }
        return !formats_.empty();
    }

    json handle(const json & request) {
        auto op = request.find("op");
        std::string name = op != request.end() && op->is_string() ? op->get<std::string>() : "";
        if (name == "hello")    return hello();
        if (name == "parse")    return parse(request);
        if (name == "open")     return open(request);
        if (name == "feed")     return feed(request);
        if (name == "finish")   return finish(request);
        if (name == "describe") return describe(request);
        if (name == "shutdown") return json::object();
        throw request_error("unknown_op", "unknown op " + (op != request.end() ? op->dump() : std::string("(none)")));
    }

  private:
    std::map<std::string, format_config>                               formats_;
    std::map<std::string, std::shared_ptr<const parser_setup>>         setups_;
    std::map<std::string, stream_state>                                streams_;
    static constexpr size_t                                            max_setups = 1024;

    json hello() const {
        json formats = json::array();
        for (const auto & entry : formats_) {
            formats.push_back(entry.first);
        }
        return {
            { "protocol", PROTOCOL_VERSION },
            { "name", "llama.cpp" },
            { "version", WORKER_VERSION },
            { "formats", formats },
            { "incremental", true },
            { "llama_cpp_commit", llama_commit() },
        };
    }

    const format_config & config_for(const json & request) const {
        std::string format = string_field(request, "format");
        auto it = formats_.find(format);
        if (it == formats_.end()) {
            throw request_error("unsupported_format", "format '" + format + "' not served");
        }
        return it->second;
    }

    // The cached parser setup for the request's format, tools and prefix.
    std::shared_ptr<const parser_setup> setup_for(const json & request) {
        const format_config & config = config_for(request);
        json        tools  = tools_field(request);
        std::string prefix = prefix_field(request);

        std::string key = string_field(request, "format") + '\0' +
                          tools.dump(-1, ' ', false, json::error_handler_t::replace) + '\0' + prefix;
        auto cached = setups_.find(key);
        if (cached != setups_.end()) {
            return cached->second;
        }
        auto setup = std::make_shared<parser_setup>();
        try {
            auto inputs   = server_inputs(config.templates.get(), tools, config.kwargs);
            auto chat     = apply_for_prefix(config.templates.get(), inputs, config.server_thinking, prefix,
                                             setup->diagnostics);
            setup->params = server_parser_params(chat);
        } catch (const std::exception & e) {
            throw parser_error(e);
        }
        if (setups_.size() >= max_setups) {
            setups_.clear();
        }
        setups_[key] = setup;
        return setup;
    }

    // Not a protocol op (the harness never sends it): what llama.cpp derives for a format and these tools, with
    // the server's enable_thinking and with the other setting -- for tests and for reading the PEG parser.
    json describe(const json & request) {
        const format_config & config = config_for(request);
        json result = {
            { "template", config.path },
            { "reasoning", config.reasoning },
            { "chat_template_kwargs", config.kwargs },
            { "server_enable_thinking", config.server_thinking },
        };
        try {
            auto inputs = server_inputs(config.templates.get(), tools_field(request), config.kwargs);
            for (bool thinking : { config.server_thinking, !config.server_thinking }) {
                set_thinking(inputs, thinking);
                common_chat_params chat = common_chat_templates_apply(config.templates.get(), inputs);
                common_peg_arena   arena;
                if (!chat.parser.empty()) {
                    arena.load(chat.parser);
                }
                result[thinking ? "thinking_on" : "thinking_off"] = {
                    { "chat_format", common_chat_format_name(chat.format) },
                    { "supports_thinking", chat.supports_thinking },
                    { "generation_prompt", chat.generation_prompt },
                    { "thinking_start_tag", chat.thinking_start_tag },
                    { "thinking_end_tags", chat.thinking_end_tags },
                    { "prompt", chat.prompt },
                    { "parser", arena.empty() ? "" : arena.dump(arena.root()) },
                };
            }
        } catch (const std::exception & e) {
            throw parser_error(e);
        }
        return result;
    }

    json parse(const json & request) {
        auto        setup = setup_for(request);
        std::string text  = string_field(request, "text");
        try {
            common_chat_msg msg         = common_chat_parse(text, /* is_partial */ false, setup->params);
            auto            diagnostics = setup->diagnostics;
            for (auto & gap : parse_gaps(text, setup->params)) {
                diagnostics.push_back(std::move(gap));
            }
            return message_json(msg, diagnostics);
        } catch (const std::exception & e) {
            throw parser_error(e);
        }
    }

    json open(const json & request) {
        auto        setup = setup_for(request);
        std::string id    = string_field(request, "stream");
        stream_state state;
        state.setup  = setup;
        streams_[id] = std::move(state);
        return json::object();
    }

    stream_state & stream_for(const json & request) {
        std::string id = string_field(request, "stream");
        auto it = streams_.find(id);
        if (it == streams_.end()) {
            throw request_error("unknown_stream", "no open stream '" + id + "'");
        }
        return it->second;
    }

    json feed(const json & request) {
        stream_state & state = stream_for(request);
        std::string    chunk = string_field(request, "chunk");
        try {
            return { { "deltas", deltas_json(state.update(chunk, /* is_partial */ true)) } };
        } catch (const std::exception & e) {
            streams_.erase(request.at("stream").get<std::string>());  // the stream is dead, as in the server
            throw parser_error(e);
        }
    }

    json finish(const json & request) {
        stream_state & found = stream_for(request);
        stream_state   state = std::move(found);
        streams_.erase(request.at("stream").get<std::string>());
        try {
            json deltas      = deltas_json(state.update("", /* is_partial */ false));
            auto diagnostics = state.setup->diagnostics;
            for (auto & gap : parse_gaps(state.generated_text, state.setup->params)) {
                diagnostics.push_back(std::move(gap));
            }
            return { { "deltas", deltas }, { "diagnostics", diagnostics } };
        } catch (const std::exception & e) {
            throw parser_error(e);
        }
    }
};

// ---------------------------------------------------------------------------------------------------------
// Main loop
// ---------------------------------------------------------------------------------------------------------

static json error_response(const json & id, const std::string & type, const std::string & message) {
    return { { "id", id }, { "ok", false }, { "error", { { "type", type }, { "message", message } } } };
}

// Answer one line; sets `stop` on a shutdown request.
static json answer(worker & w, const std::string & line, bool & stop) {
    json request;
    try {
        request = json::parse(line);
    } catch (const std::exception & e) {
        return error_response(json(), "bad_request", std::string("not JSON: ") + e.what());
    }
    if (!request.is_object()) {
        return error_response(json(), "bad_request", "a request must be a JSON object");
    }
    json id = request.contains("id") ? request["id"] : json();
    try {
        json result = w.handle(request);
        stop = request.value("op", json()) == "shutdown";
        return { { "id", id }, { "ok", true }, { "result", result } };
    } catch (const request_error & e) {
        return error_response(id, e.type, e.what());
    } catch (const std::exception & e) {  // anything else is the library's doing
        return error_response(id, "parser_error", e.what());
    }
}

static int usage() {
    fprintf(stderr, "usage: llama-cpp-worker --template FORMAT=PATH [--template FORMAT=PATH ...] "
                    "[--reasoning FORMAT=on|off|auto ...] [--chat-template-kwargs FORMAT=JSON ...] [--verbose]\n");
    return 2;
}

int main(int argc, char ** argv) {
    redirect_stdout();
    bool verbose = false;
    struct option_value { std::string option, format, value; };
    std::vector<option_value> options;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--verbose") {
            verbose = true;
        } else if ((arg == "--template" || arg == "--reasoning" || arg == "--chat-template-kwargs") && i + 1 < argc) {
            std::string spec = argv[++i];
            size_t eq = spec.find('=');
            if (eq == std::string::npos || eq == 0) {
                return usage();
            }
            options.push_back({ arg, spec.substr(0, eq), spec.substr(eq + 1) });
        } else {
            return usage();
        }
    }
    // quiet: the library's warnings ("unparsed ... output") repeat what the error response says
    common_log_set_verbosity_thold(verbose ? LOG_DEFAULT_LLAMA : LOG_LEVEL_ERROR);

    worker w;
    for (const auto & opt : options) {
        bool ok = opt.option == "--template"  ? w.add_template(opt.format, opt.value)
                : opt.option == "--reasoning" ? w.set_reasoning(opt.format, opt.value)
                                              : w.set_kwargs(opt.format, opt.value);
        if (!ok) {
            return 3;
        }
    }
    if (!w.finish_setup()) {
        return options.empty() ? usage() : 3;
    }

    std::string line;
    bool stop = false;
    while (!stop && std::getline(std::cin, line)) {
        write_line(answer(w, line, stop));
    }
    return 0;
}
