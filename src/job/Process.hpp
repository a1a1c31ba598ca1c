// What colmet-job needs to know before it starts another program: where
// colmet's programs are, and whom sudo ran it for. Starting and waiting are
// the launcher's (launch/Launch.hpp, launch/Wait.hpp).
#pragma once

#include "common/result.hpp"
#include "launch/Credentials.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace colmet::job {

// Under sudo (root, SUDO_USER set to another user): that user's credentials
// and the environment sudo gives a command it runs as a user: the current
// one (which sudo already reset) with HOME, USER, LOGNAME, SHELL and MAIL of
// the user. nullopt when not run by sudo for another user; an error when
// SUDO_USER names no user here.
Result<std::optional<launch::Credentials>> sudo_invoker();

// Path of a sibling program: the directory of this executable first, then
// the install locations, then $PATH. Empty when not found.
std::filesystem::path find_program(const std::string &name);

}  // namespace colmet::job
