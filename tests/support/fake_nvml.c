/* A test double of NVIDIA's NVML library (libnvidia-ml.so.1), clearly not
 * the real one: it exports the functions colmet's gpu backend calls and
 * answers them from a text file named by the environment variable
 * COLMET_FAKE_NVML, read again at every call, so a test changes the values
 * between samples. One line per GPU or process:
 *
 *   gpu <index> <uuid> <minor> util=<%> memutil=<%> used=<B> total=<B> power=<mW> energy=<mJ> temp=<C> sm=<MHz>
 * mem=<MHz> proc <gpu index> <pid> <bytes, or "na">
 *
 * A key that is absent, or "-", answers NVML_ERROR_NOT_SUPPORTED (3).
 * COLMET_FAKE_NVML_INIT=fail makes nvmlInit_v2 answer
 * NVML_ERROR_DRIVER_NOT_LOADED (9). Return codes and structures are NVML's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 8
#define MAX_PROCS 64

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

enum { OK = 0, INVALID = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT = 7, NOT_LOADED = 9, UNINIT = 1 };
enum { K_UTIL, K_MEMUTIL, K_USED, K_TOTAL, K_POWER, K_ENERGY, K_TEMP, K_SM, K_MEM, K_COUNT };
static const char *const keys[K_COUNT] = {"util", "memutil", "used", "total", "power", "energy", "temp", "sm", "mem"};

struct gpu {
    unsigned index;
    char uuid[80];
    int minor;
    int have[K_COUNT];
    unsigned long long value[K_COUNT];
};
struct proc {
    unsigned gpu, pid;
    unsigned long long bytes;
};

static struct gpu gpus[MAX_GPUS];
static struct proc procs[MAX_PROCS];
static unsigned n_gpus, n_procs;
static int initialised;

static void load(void)
{
    const char *path = getenv("COLMET_FAKE_NVML");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[512];
    n_gpus = n_procs = 0;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
        if (!tok)
            continue;
        if (strcmp(tok, "gpu") == 0 && n_gpus < MAX_GPUS) {
            struct gpu *g = &gpus[n_gpus];
            memset(g, 0, sizeof *g);
            char *index = strtok_r(NULL, " \t\n", &save), *uuid = strtok_r(NULL, " \t\n", &save),
                 *minor = strtok_r(NULL, " \t\n", &save);
            if (!index || !uuid || !minor)
                continue;
            g->index = (unsigned)strtoul(index, NULL, 10);
            snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
            g->minor = atoi(minor);
            while ((tok = strtok_r(NULL, " \t\n", &save))) {
                char *eq = strchr(tok, '=');
                if (!eq)
                    continue;
                *eq = '\0';
                for (int k = 0; k < K_COUNT; ++k)
                    if (strcmp(tok, keys[k]) == 0 && strcmp(eq + 1, "-") != 0) {
                        g->have[k] = 1;
                        g->value[k] = strtoull(eq + 1, NULL, 10);
                    }
            }
            ++n_gpus;
        } else if (strcmp(tok, "proc") == 0 && n_procs < MAX_PROCS) {
            char *gpu = strtok_r(NULL, " \t\n", &save), *pid = strtok_r(NULL, " \t\n", &save),
                 *bytes = strtok_r(NULL, " \t\n", &save);
            if (!gpu || !pid || !bytes)
                continue;
            procs[n_procs].gpu = (unsigned)strtoul(gpu, NULL, 10);
            procs[n_procs].pid = (unsigned)strtoul(pid, NULL, 10);
            procs[n_procs].bytes = strcmp(bytes, "na") == 0 ? ~0ULL : strtoull(bytes, NULL, 10);
            ++n_procs;
        }
    }
    fclose(f);
}

static struct gpu *device(nvmlDevice_t d)
{
    uintptr_t i = (uintptr_t)d;
    if (!initialised || i == 0)
        return NULL;
    load();
    return i - 1 < n_gpus ? &gpus[i - 1] : NULL;
}

static nvmlReturn_t value(nvmlDevice_t d, int key, unsigned long long *out)
{
    struct gpu *g = device(d);
    if (!g)
        return INVALID;
    if (!g->have[key])
        return NOT_SUPPORTED;
    *out = g->value[key];
    return OK;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    const char *mode = getenv("COLMET_FAKE_NVML_INIT");
    if (mode && strcmp(mode, "fail") == 0)
        return NOT_LOADED;
    initialised = 1;
    return OK;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    initialised = 0;
    return OK;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
    switch (rc) {
    case OK:
        return "Success";
    case UNINIT:
        return "Uninitialized";
    case INVALID:
        return "Invalid Argument";
    case NOT_SUPPORTED:
        return "Not Supported";
    case NOT_FOUND:
        return "Not Found";
    case INSUFFICIENT:
        return "Insufficient Size";
    case NOT_LOADED:
        return "Driver Not Loaded";
    default:
        return "Unknown Error";
    }
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!initialised)
        return UNINIT;
    load();
    *count = n_gpus;
    return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *d)
{
    if (!initialised)
        return UNINIT;
    load();
    if (index >= n_gpus)
        return INVALID;
    *d = (nvmlDevice_t)(uintptr_t)(index + 1);
    return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length)
{
    struct gpu *g = device(d);
    if (!g)
        return INVALID;
    if (strlen(g->uuid) + 1 > length)
        return INSUFFICIENT;
    strcpy(uuid, g->uuid);
    return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor)
{
    struct gpu *g = device(d);
    if (!g)
        return INVALID;
    if (g->minor < 0)
        return NOT_SUPPORTED;
    *minor = (unsigned)g->minor;
    return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
    unsigned long long gpu, mem;
    nvmlReturn_t rc = value(d, K_UTIL, &gpu);
    if (rc == OK)
        rc = value(d, K_MEMUTIL, &mem);
    if (rc == OK) {
        u->gpu = (unsigned)gpu;
        u->memory = (unsigned)mem;
    }
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    unsigned long long used, total;
    nvmlReturn_t rc = value(d, K_USED, &used);
    if (rc == OK)
        rc = value(d, K_TOTAL, &total);
    if (rc == OK) {
        m->used = used;
        m->total = total;
        m->free = total - used;
    }
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
    unsigned long long v;
    nvmlReturn_t rc = value(d, K_POWER, &v);
    if (rc == OK)
        *mw = (unsigned)v;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj)
{
    return value(d, K_ENERGY, mj);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *c)
{
    unsigned long long v;
    if (sensor != 0)
        return INVALID;
    nvmlReturn_t rc = value(d, K_TEMP, &v);
    if (rc == OK)
        *c = (unsigned)v;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz)
{
    unsigned long long v;
    nvmlReturn_t rc = type == 1 ? value(d, K_SM, &v) : type == 2 ? value(d, K_MEM, &v) : INVALID;
    if (rc == OK)
        *mhz = (unsigned)v;
    return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                            nvmlProcessInfo_t *infos)
{
    struct gpu *g = device(d);
    unsigned n = 0;
    if (!g)
        return INVALID;
    for (unsigned i = 0; i < n_procs; ++i)
        if (procs[i].gpu == g->index) {
            if (n < *count) {
                infos[n].pid = procs[i].pid;
                infos[n].usedGpuMemory = procs[i].bytes;
                infos[n].gpuInstanceId = infos[n].computeInstanceId = 0xFFFFFFFFu;
            }
            ++n;
        }
    if (n > *count) {
        *count = n;
        return INSUFFICIENT;
    }
    *count = n;
    return OK;
}
