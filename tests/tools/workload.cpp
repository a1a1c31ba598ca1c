// colmet-workload: a predictable job for demos and tests. Burns CPU, touches
// memory and writes a file, then prints what it used (from getrusage) as one
// line of JSON on stdout, so tests can compare colmet's numbers with it.
//
//   colmet-workload [--cpu-seconds S] [--memory-mib M] [--write-mib W --file PATH] [--threads N]
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

double thread_cpu_seconds()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void burn(double seconds)
{
    volatile double x = 1.0;
    double start = thread_cpu_seconds();
    while (thread_cpu_seconds() - start < seconds)
        for (int i = 0; i < 100000; ++i)
            x = x * 1.0000001 + 0.0000001;
}

int usage()
{
    std::fprintf(stderr, "usage: colmet-workload [--cpu-seconds S] [--memory-mib M] [--write-mib W --file PATH] "
                         "[--threads N]\n");
    return 64;
}

}  // namespace

int main(int argc, char **argv)
{
    double cpu_seconds = 0;
    long memory_mib = 0;
    long write_mib = 0;
    int threads = 1;
    std::string file;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc)
            return usage();
        const char *v = argv[++i];
        if (a == "--cpu-seconds")
            cpu_seconds = std::atof(v);
        else if (a == "--memory-mib")
            memory_mib = std::atol(v);
        else if (a == "--write-mib")
            write_mib = std::atol(v);
        else if (a == "--file")
            file = v;
        else if (a == "--threads")
            threads = std::atoi(v);
        else
            return usage();
    }
    if (threads < 1 || cpu_seconds < 0 || memory_mib < 0 || write_mib < 0 || (write_mib > 0 && file.empty()))
        return usage();

    std::vector<char> memory(static_cast<size_t>(memory_mib) << 20);
    for (size_t i = 0; i < memory.size(); i += 4096)
        memory[i] = static_cast<char>(i);

    if (write_mib > 0) {
        int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            std::perror(file.c_str());
            return 1;
        }
        std::vector<char> block(1 << 20, 'c');
        for (long i = 0; i < write_mib; ++i)
            if (write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
                std::perror("write");
                return 1;
            }
        fsync(fd);
        close(fd);
    }

    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t)
        pool.emplace_back(burn, cpu_seconds / threads);
    for (auto &t : pool)
        t.join();

    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double user = static_cast<double>(ru.ru_utime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec) / 1e6;
    double sys = static_cast<double>(ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_stime.tv_usec) / 1e6;
    std::printf("{\"cpu_seconds\": %.6f, \"user_seconds\": %.6f, \"system_seconds\": %.6f, \"max_rss_kib\": %ld, "
                "\"memory_checksum\": %d}\n",
                user + sys, user, sys, ru.ru_maxrss, memory.empty() ? 0 : memory[memory.size() / 2]);
    return 0;
}
