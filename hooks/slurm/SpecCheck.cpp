#include "SpecCheck.hpp"

#include "spec/JobSpec.hpp"

namespace colmet::spank {

UserChoice interpret_option(const char *value)
{
    if (value == nullptr)
        return {};
    std::string_view v(value);
    if (v.empty() || v == "(null)" || v == "true")
        return {};
    if (v == "off")
        return {Request::off, {}};
    return {Request::spec, std::string(v)};
}

std::optional<std::string> spec_error(std::string_view spec)
{
    if (spec == "off")
        return std::nullopt;
    auto parsed = spec::parse_spec(spec);
    if (!parsed)
        return parsed.error().message();
    return std::nullopt;
}

std::string effective_spec(const UserChoice &choice, const std::string &site_metrics)
{
    return choice.request == Request::spec ? choice.spec : site_metrics;
}

}  // namespace colmet::spank
