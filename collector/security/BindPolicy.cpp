#include "collector/security/BindPolicy.hpp"

#include <string_view>

namespace colmet::collector {

bool is_loopback_endpoint(const std::string &uri)
{
    std::string_view u(uri);
    if (u.rfind("ipc://", 0) == 0 || u.rfind("inproc://", 0) == 0)
        return true;
    if (u.rfind("tcp://", 0) != 0)
        return false;
    u.remove_prefix(6);
    // A "source;destination" form names the source first: not a bind form.
    if (u.find(';') != std::string_view::npos)
        return false;
    std::string_view host;
    if (!u.empty() && u.front() == '[') {
        auto close = u.find(']');
        if (close == std::string_view::npos)
            return false;
        host = u.substr(1, close - 1);
    } else {
        host = u.substr(0, u.rfind(':'));
    }
    if (host == "localhost" || host == "lo" || host == "::1")
        return true;
    // 127.a.b.c, digits and dots only.
    if (host.rfind("127.", 0) != 0)
        return false;
    int dots = 0;
    for (char c : host) {
        if (c == '.')
            ++dots;
        else if (c < '0' || c > '9')
            return false;
    }
    return dots == 3;
}

Result<void> check_bind(const std::string &uri, bool authenticated, bool allow_unauthenticated)
{
    if (authenticated || allow_unauthenticated || is_loopback_endpoint(uri))
        return ok();
    return Error::invalid("refusing to listen on " + uri +
                          " without authentication: any user who reaches it could write into any job's file. "
                          "Set curve-secret-key (see colmet-keygen(8)), listen on the loopback, "
                          "or set allow-unauthenticated = yes");
}

std::string private_tmp_warning(const std::string &uri, const char *invocation_id)
{
    if (invocation_id == nullptr || *invocation_id == '\0')
        return "";
    constexpr std::string_view scheme = "ipc://";
    if (!uri.starts_with(scheme))
        return "";
    const std::string_view path = std::string_view(uri).substr(scheme.size());
    if (!path.starts_with("/tmp/") && !path.starts_with("/var/tmp/"))
        return "";
    return "listening on " + uri +
           " in this service's private /tmp (PrivateTmp in its unit): no node can reach it; use an address "
           "under /run/colmet-collector (the unit's RuntimeDirectory), e.g. ipc:///run/colmet-collector/collector.sock";
}

}  // namespace colmet::collector
