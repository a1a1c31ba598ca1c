// Which of the node's NVIDIA GPUs a job may use, in this order of trust:
//  1. its devices cgroup (v1 devices.list): the /dev/nvidia<N> character
//     devices (major 195, N below 255) it allows, unless it allows them all;
//  2. a list given by the hook or found in the job's environment
//     (CUDA_VISIBLE_DEVICES, then Slurm's SLURM_JOB_GPUS): items are GPU
//     UUIDs ("GPU-...") or device numbers (the N of /dev/nvidia<N>, as
//     Slurm's GPU ids are); a CUDA ordinal is not a device number, so set
//     CUDA_VISIBLE_DEVICES to UUIDs for colmet to trust it;
//  3. otherwise every GPU of the node, said so in the selection.
#pragma once

#include "common/result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace colmet::node::backends::gpu {

struct DeviceId {
    unsigned index = 0;  // NVML's
    std::string uuid;
    int minor = -1;  // N of /dev/nvidia<N>; -1 when NVML does not say
};

struct Selection {
    std::vector<unsigned> indices;  // NVML indices, ascending
    std::string source;             // "devices cgroup", "CUDA_VISIBLE_DEVICES", ... or "every GPU of the node"
    bool exclusive = false;         // the devices cgroup keeps other jobs off these GPUs
};

// `devices_list`: the text of the job's devices.list (empty: none, cgroup v2).
// `list`, `list_source`: the list and where it came from (empty: none).
// An item of the list that names no GPU of the node is an error.
Result<Selection> select_gpus(const std::vector<DeviceId> &devices, std::string_view devices_list,
                              std::string_view list, std::string_view list_source);

}  // namespace colmet::node::backends::gpu
