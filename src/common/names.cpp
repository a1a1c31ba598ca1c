#include "common/names.hpp"

#include <cstdint>
#include <cstdio>

namespace colmet {

static bool safe_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
}

std::string sanitize_name(std::string_view id)
{
    std::string out;
    out.reserve(id.size() < k_max_id_length ? id.size() : k_max_id_length);
    for (char c : id.substr(0, k_max_id_length))
        out.push_back(safe_char(c) ? c : '_');
    if (out.empty())
        return "_";
    if (out.front() == '.')
        out.front() = '_';
    return out;
}

std::string job_file_stem(std::string_view id, size_t max_length)
{
    static const char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(id.size() + 16);
    for (size_t i = 0; i < id.size(); ++i) {
        const auto c = static_cast<unsigned char>(id[i]);
        if (safe_char(id[i]) && !(i == 0 && c == '.')) {
            out.push_back(id[i]);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
    if (!out.empty() && out.size() <= max_length)
        return out;
    char tail[20];
    std::snprintf(tail, sizeof tail, "~%016llx", static_cast<unsigned long long>(fnv1a64(id)));
    return sanitize_name(id) + tail;
}

uint64_t fnv1a64(std::string_view bytes)
{
    uint64_t h = 14695981039346656037ULL;
    for (char c : bytes) {
        h ^= static_cast<unsigned char>(c);
        h *= 1099511628211ULL;
    }
    return h;
}

std::filesystem::path job_file(const std::filesystem::path &dir, std::string_view id, JobFile kind)
{
    const char *suffix = ".h5";
    switch (kind) {
    case JobFile::sampler_record:
        suffix = ".pid";
        break;
    case JobFile::control_socket:
        suffix = ".ctl";
        break;
    case JobFile::data:
        suffix = ".h5";
        break;
    case JobFile::summary:
        suffix = ".json";
        break;
    }
    return dir / (job_file_stem(id) + suffix);
}

std::filesystem::path spool_file(const std::filesystem::path &dir, std::string_view id, std::string_view sender)
{
    char tag[20];
    std::snprintf(tag, sizeof tag, ".%016llx", static_cast<unsigned long long>(fnv1a64(sender)));
    return dir / (job_file_stem(id, k_max_spool_stem_length) + tag + std::string(k_spool_suffix));
}

bool valid_identifier(std::string_view id)
{
    if (id.empty() || id.size() > k_max_id_length)
        return false;
    for (char c : id) {
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e || c == '/')
            return false;
    }
    return true;
}

}  // namespace colmet
