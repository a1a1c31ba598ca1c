// The status text of one sample, built in a buffer reserved once so that
// reporting a failure on the hot path does not allocate. Items are joined
// with "; "; text past the capacity is cut.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace colmet::node::backends {

class StatusText {
public:
    static constexpr size_t k_capacity = 256;  // MetricBackend::set_status keeps 256 bytes

    StatusText() { m_text.reserve(k_capacity); }

    void clear() noexcept { m_text.clear(); }
    bool empty() const noexcept { return m_text.empty(); }
    std::string_view view() const noexcept { return m_text; }

    // Start a new item: "; " after the previous one, then `text`.
    StatusText &item(std::string_view text) noexcept
    {
        if (!m_text.empty())
            add("; ");
        return add(text);
    }

    // Append to the current item.
    StatusText &add(std::string_view text) noexcept
    {
        size_t room = m_text.capacity() - m_text.size();
        m_text.append(text.substr(0, room));  // within capacity: no allocation
        return *this;
    }

    StatusText &add(uint64_t number) noexcept
    {
        char digits[24];
        auto res = std::to_chars(digits, digits + sizeof digits, number);
        return add(std::string_view(digits, static_cast<size_t>(res.ptr - digits)));
    }

private:
    std::string m_text;
};

}  // namespace colmet::node::backends
