#include "collector/sinks/hdf5/ChunkCodec.hpp"

#include <libdeflate.h>

#include <algorithm>
#include <cstring>

namespace colmet::collector::hdf5 {

void shuffle_bytes(const unsigned char *in, unsigned char *out, size_t size, size_t elem_size)
{
    if (elem_size <= 1 || size < elem_size) {
        std::memcpy(out, in, size);
        return;
    }
    const size_t n = size / elem_size;
    for (size_t b = 0; b < elem_size; ++b) {
        unsigned char *dst = out + b * n;
        const unsigned char *src = in + b;
        for (size_t e = 0; e < n; ++e)
            dst[e] = src[e * elem_size];
    }
    const size_t done = n * elem_size;
    std::memcpy(out + done, in + done, size - done);
}

ChunkCodec::ChunkCodec(int level) : m_level(std::clamp(level, 0, 9)) {}

ChunkCodec::~ChunkCodec()
{
    if (m_compressor)
        libdeflate_free_compressor(m_compressor);
}

std::span<const unsigned char> ChunkCodec::encode(const void *raw, size_t size, size_t elem_size)
{
    const auto *bytes = static_cast<const unsigned char *>(raw);
    if (!m_compressor)
        m_compressor = libdeflate_alloc_compressor(std::max(m_level, 1));
    if (!m_compressor)
        return {};
    if (m_shuffled.size() < size)
        m_shuffled.resize(size);
    shuffle_bytes(bytes, m_shuffled.data(), size, elem_size);
    const size_t bound = libdeflate_zlib_compress_bound(m_compressor, size);
    if (m_out.size() < bound)
        m_out.resize(bound);
    const size_t n = libdeflate_zlib_compress(m_compressor, m_shuffled.data(), size, m_out.data(), m_out.size());
    if (n == 0)
        return {};
    return {m_out.data(), n};
}

}  // namespace colmet::collector::hdf5
