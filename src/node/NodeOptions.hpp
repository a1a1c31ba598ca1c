// colmet-node's settings, from the command line and the [node] section of
// colmet.conf (command line wins). The defaults here are colmet-node's, and
// the only copy: colmet-job reads them to know what is in force without
// passing them.
#pragma once

#include "common/period.hpp"
#include "node/ZmqTransport.hpp"
#include "node/delivery/Spool.hpp"

#include <string>
#include <utility>
#include <vector>

namespace colmet::node {

struct NodeOptions {
    std::string job_id;
    std::string cgroup;                      // relative (/oar/alice_42) or absolute v2 directory
    std::string find_cgroup;                 // the job's level ("job_7", "job_7/step_0"): locate the job's
                                             // directories from the processes under `cgroup` (empty: don't)
    std::vector<std::string> cgroup_leaves;  // cgroup v2: JobContext::cpu_leaves
    std::string cgroup_root = "/sys/fs/cgroup";
    std::string proc_root = "/proc";
    std::string hostname;  // default: gethostname()
    std::string user;      // job owner, recorded as metadata
    double period_s = 5;
    ZmqOptions zmq;
    double ack_timeout_s = 30;  // see SamplerConfig
    double ack_wait_s = 2;
    double outbox_mib = 16;
    std::string spool_dir = k_default_spool_dir;  // the node spool ("none": no spool)
    double spool_mib = 64;                        // per job
    double spool_node_mib = 512;                  // all the node's spool files
    std::vector<std::string> disabled_backends;
    bool enable_perfhw = false;  // backend perfhw (perf_event in cgroup mode)
    std::vector<std::string> perfhw_list = {"instructions", "cache_misses", "page_faults"};
    std::string sysfs_root = "/sys";
    std::string perfhw_mapping_dir;          // write perfhw_mapping.<time>.csv there (empty: none)
    std::vector<std::string> node_backends;  // node-level backends enabled (their flags: spec/backend_catalog.hpp)
    std::string rapl_mapping_dir;            // write RAPL_mapping.<time>.csv there (empty: none)
    std::string temperature_mapping_dir;     // write temperature_mapping.<time>.csv there (empty: none)
    std::string gpus;  // backend gpu: the job's GPUs (empty: CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS)
    std::string nvml_library = "libnvidia-ml.so.1";           // backend gpu: NVML, loaded at run time
    std::string energy_ledger = "/run/colmet/energy.ledger";  // backend energy: the node's ledger (empty: none)
    std::string control_dir = "/run/colmet";                  // the job's control socket <dir>/<job>.ctl (empty: none)
    std::string legacy_control_uri;                           // original configure messages on tcp:// (empty: off)
    std::vector<std::string> meta;                            // extra KEY=VALUE metadata
    std::string log_file;
    int verbosity = 0;
};

}  // namespace colmet::node
