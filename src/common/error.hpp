// Error values carried across module boundaries: a category, the errno when a
// system call failed, and a human-readable context ("open /sys/...").
#pragma once

#include <string>

namespace colmet {

enum class Errc {
    system,       // a system call failed; m_errno says why
    parse,        // input text or bytes did not match the expected format
    invalid,      // a value was out of range or not allowed
    unsupported,  // the machine or kernel lacks the feature
    not_found,    // a file, job or metric that should exist does not
    conflict,     // it belongs to someone else (a job file another collector writes)
    internal,     // a bug or an unexpected library failure
};

class Error {
public:
    Error(Errc code, std::string message, int err = 0) : m_code(code), m_message(std::move(message)), m_errno(err) {}

    // "what path: strerror(err)", the form every system error takes.
    static Error system(const std::string &what, const std::string &path, int err);
    static Error parse(std::string message) { return {Errc::parse, std::move(message)}; }
    static Error invalid(std::string message) { return {Errc::invalid, std::move(message)}; }

    Errc code() const { return m_code; }
    int sys_errno() const { return m_errno; }
    const std::string &message() const { return m_message; }

    // Prefix the message with more context: "reading cpu.stat: " + message.
    Error with_context(const std::string &context) const;

private:
    Errc m_code;
    std::string m_message;
    int m_errno;
};

}  // namespace colmet
