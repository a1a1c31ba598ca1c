// colmet-ctl's side of the control socket: connect to a job's socket, send
// one request frame, wait for the answer frame, all within one deadline.
#pragma once

#include "common/result.hpp"
#include "node/control/ControlProtocol.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace colmet::ctl {

// Why the sampler could not be asked; each maps to an exit status.
enum class Unreachable { no_socket, permission, refused, timeout, io };

struct ClientError {
    Unreachable kind;
    std::string message;
};

// One request/answer exchange on `socket` within timeout_ms. Never blocks
// longer: connect, write and read are non-blocking and polled.
struct Exchange {
    std::optional<node::control::ControlAnswer> answer;
    std::optional<ClientError> error;
};
Exchange exchange(const std::filesystem::path &socket, const node::control::ControlRequest &request, int timeout_ms);

}  // namespace colmet::ctl
