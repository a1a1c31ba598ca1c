// Prints every message in a readable form (colmet-collector --stdout).
#pragma once

#include "collector/Sink.hpp"

#include <cstdio>

namespace colmet::collector {

class StdoutSink : public Sink {
public:
    explicit StdoutSink(std::FILE *out = stdout) : m_out(out) {}
    void consume(const wire::Message &msg, const Delivery &delivery) noexcept override;
    void tick(int64_t now_mono_ns) noexcept override;
    void flush_all(int64_t) noexcept override { std::fflush(m_out); }
    void close_all() noexcept override;

private:
    std::FILE *m_out;
};

}  // namespace colmet::collector
