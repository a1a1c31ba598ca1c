#include "wire/ack.hpp"

#include "wire/message.hpp"

namespace colmet::wire {

std::string ack_topic(std::string_view sender)
{
    std::string topic(sender);
    topic.push_back('\0');
    return topic;
}

std::string encode_ack(std::string_view sender, uint64_t seq)
{
    std::string frame = ack_topic(sender);
    frame.push_back(static_cast<char>(k_acked_protocol_version));
    for (int shift = 56; shift >= 0; shift -= 8)
        frame.push_back(static_cast<char>((seq >> shift) & 0xff));
    return frame;
}

std::optional<uint64_t> decode_ack(std::string_view frame, std::string_view sender)
{
    if (frame.size() != sender.size() + 10 || frame.substr(0, sender.size()) != sender ||
        frame[sender.size()] != '\0' ||
        static_cast<unsigned char>(frame[sender.size() + 1]) != k_acked_protocol_version)
        return std::nullopt;
    uint64_t seq = 0;
    for (size_t i = sender.size() + 2; i < frame.size(); ++i)
        seq = (seq << 8) | static_cast<unsigned char>(frame[i]);
    return seq;
}

}  // namespace colmet::wire
