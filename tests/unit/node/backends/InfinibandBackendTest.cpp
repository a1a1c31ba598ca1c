#include "NodeTestSupport.hpp"

#include "node/backends/infiniband/InfinibandBackend.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace colmet;
using namespace colmet::node::backends::infiniband;
using test::at;
using test::metric_names;
using test::take;

TEST(InfinibandBackendTest, hca_with_two_ports_64_bit_counters_data_in_bytes)
{
    test::FakeTree tree;
    tree.copy_fixture("node/infiniband");
    auto b = make_infiniband_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    EXPECT_EQ((*b)->name(), "infiniband");
    EXPECT_EQ((*b)->scope(), wire::Scope::node);
    EXPECT_EQ(metric_names(**b),
              (std::vector<std::string>{"mlx4_0.1.xmit_bytes", "mlx4_0.1.rcv_bytes", "mlx4_0.1.xmit_packets",
                                        "mlx4_0.1.rcv_packets", "mlx4_0.2.xmit_bytes", "mlx4_0.2.rcv_bytes",
                                        "mlx4_0.2.xmit_packets", "mlx4_0.2.rcv_packets"}));
    std::vector<std::string> units;
    for (const auto &m : (*b)->metrics()) {
        units.push_back(m.unit);
        EXPECT_EQ(m.kind, wire::MetricKind::counter);
    }
    EXPECT_EQ(units, (std::vector<std::string>{"B", "B", "1", "1", "B", "B", "1", "1"}));
    // counters_ext/*_64, not the saturated 32-bit counters/; data words of 4 bytes.
    EXPECT_EQ(take(**b), (std::vector<double>{4e12, 8e12, 3e9, 4e9, 44, 88, 33, 44}));
    EXPECT_EQ((*b)->status(), "");
    tree.write("sys/class/infiniband/mlx4_0/ports/2/counters_ext/port_rcv_data_64", "1000\n");
    auto v = take(**b);
    EXPECT_EQ(at(**b, v, "mlx4_0.2.rcv_bytes"), 4000);
}

TEST(InfinibandBackendTest, current_drivers_omni_path_and_a_vanished_counter)
{
    test::FakeTree tree;
    // mlx5: 64-bit values in counters/ itself.
    tree.write("sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "10000000000000\n");
    tree.write("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "5\n");
    tree.write("sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_packets", "6\n");
    tree.write("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_packets", "7\n");
    // Omni-Path hfi1: 8-byte flits.
    tree.write("sys/class/infiniband/hfi1_0/ports/1/counters/port_xmit_data", "10\n");
    tree.write("sys/class/infiniband/hfi1_0/ports/1/counters/port_rcv_data", "20\n");
    tree.write("sys/class/infiniband/hfi1_0/ports/1/counters/port_xmit_packets", "1\n");
    tree.write("sys/class/infiniband/hfi1_0/ports/1/counters/port_rcv_packets", "2\n");
    auto b = make_infiniband_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_TRUE(b) << b.error().message();
    auto v = take(**b);
    EXPECT_EQ(at(**b, v, "mlx5_0.1.xmit_bytes"), 4e13);
    EXPECT_EQ(at(**b, v, "mlx5_0.1.rcv_bytes"), 20);
    EXPECT_EQ(at(**b, v, "hfi1_0.1.xmit_bytes"), 80);
    EXPECT_EQ(at(**b, v, "hfi1_0.1.rcv_bytes"), 160);
    EXPECT_EQ(at(**b, v, "hfi1_0.1.rcv_packets"), 2);
    // A port whose counters became unreadable: NaN and the reason.
    tree.write("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_packets", "garbage\n");
    v = take(**b);
    EXPECT_TRUE(std::isnan(at(**b, v, "mlx5_0.1.rcv_packets")));
    EXPECT_EQ((*b)->status(), "mlx5_0.1.rcv_packets: Invalid argument");
}

TEST(InfinibandBackendTest, no_device_is_not_found)
{
    test::FakeTree tree;
    auto b = make_infiniband_backend({tree.path("sys"), tree.path("proc")});
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().code(), Errc::not_found);
    EXPECT_EQ(b.error().message(), "no InfiniBand port counters in " + tree.path("sys/class/infiniband").string());
}
