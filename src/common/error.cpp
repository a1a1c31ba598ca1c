#include "common/error.hpp"

#include <cstring>

namespace colmet {

Error Error::system(const std::string &what, const std::string &path, int err)
{
    std::string text = what;
    if (!path.empty()) {
        text += ' ';
        text += path;
    }
    text += ": ";
    text += std::strerror(err);
    return {Errc::system, std::move(text), err};
}

Error Error::with_context(const std::string &context) const { return {m_code, context + ": " + m_message, m_errno}; }

}  // namespace colmet
