#include "collector/sinks/hdf5/Hdf5Io.hpp"

#include "common/names.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace colmet::collector::hdf5 {

namespace {

struct ErrorWalk {
    std::string api;       // the API call the application made
    std::string specific;  // the deepest entry: where the failure was detected
};

herr_t walk_error(unsigned n, const H5E_error2_t *e, void *data)
{
    auto *walk = static_cast<ErrorWalk *>(data);
    std::string text = std::string(e->func_name ? e->func_name : "?") + ": " + (e->desc ? e->desc : "");
    if (n == 0)
        walk->api = text;
    walk->specific = std::move(text);
    return 0;
}

// Run an attribute write: open the existing attribute when its type equals
// file_type and it is scalar/shaped like space, else (re)create it.
Result<void> write_attr(hid_t obj, const char *name, hid_t file_type, hid_t space, hid_t mem_type, const void *buf)
{
    Attribute attr;
    if (attr_exists(obj, name)) {
        attr = Attribute{H5Aopen(obj, name, H5P_DEFAULT)};
        if (attr) {
            Datatype old_type{H5Aget_type(attr.get())};
            Dataspace old_space{H5Aget_space(attr.get())};
            bool same = H5Tequal(old_type.get(), file_type) > 0 && H5Sextent_equal(old_space.get(), space) > 0;
            if (!same)
                attr.reset();
        }
        if (!attr && H5Adelete(obj, name) < 0)
            return h5_error(std::string("replace attribute ") + name);
    }
    if (!attr)
        attr = Attribute{H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT)};
    if (!attr)
        return h5_error(std::string("create attribute ") + name);
    if (H5Awrite(attr.get(), mem_type, buf) < 0)
        return h5_error(std::string("write attribute ") + name);
    return ok();
}

Result<void> write_scalar(hid_t obj, const char *name, hid_t file_type, hid_t mem_type, const void *buf)
{
    Dataspace space{H5Screate(H5S_SCALAR)};
    if (!space)
        return h5_error("create dataspace");
    return write_attr(obj, name, file_type, space.get(), mem_type, buf);
}

template <typename T>
Result<T> read_scalar(hid_t obj, const char *name, hid_t mem_type)
{
    Attribute attr{H5Aopen(obj, name, H5P_DEFAULT)};
    if (!attr)
        return Error(Errc::not_found, std::string("no attribute ") + name);
    Dataspace space{H5Aget_space(attr.get())};
    if (H5Sget_simple_extent_npoints(space.get()) != 1)
        return Error::invalid(std::string("attribute ") + name + " is not a scalar");
    T value{};
    if (H5Aread(attr.get(), mem_type, &value) < 0)
        return h5_error(std::string("read attribute ") + name);
    return value;
}

}  // namespace

Error h5_error(const std::string &what)
{
    ErrorWalk walk;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_error, &walk);
    H5Eclear2(H5E_DEFAULT);
    std::string message = what;
    if (!walk.api.empty())
        message += ": " + walk.api;
    if (!walk.specific.empty() && walk.specific != walk.api)
        message += ": " + walk.specific;
    return Error(Errc::internal, std::move(message));
}

std::string object_name(std::string_view id)
{
    std::string name = sanitize_name(id);
    if (name == id)
        return name;
    std::array<char, 20> hex{};
    std::snprintf(hex.data(), hex.size(), "-%016llx", static_cast<unsigned long long>(fnv1a64(id)));
    return name + hex.data();
}

PropList file_access_plist()
{
    PropList fapl{H5Pcreate(H5P_FILE_ACCESS)};
    H5Pset_file_locking(fapl.get(), false, true);
    return fapl;
}

bool close_without_writing(File &file)
{
    if (!file)
        return true;
    void *handle = nullptr;
    if (H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle) >= 0 && handle) {
        int *fd = static_cast<int *>(handle);  // the sec2 driver's descriptor
        int nowhere = ::memfd_create("colmet-abandoned", MFD_CLOEXEC);
        if (nowhere >= 0 && *fd >= 0 && nowhere != *fd) {
            ::dup3(nowhere, *fd, O_CLOEXEC);
            ::close(nowhere);
        }
    }
    bool closed = file.reset();
    H5Eclear2(H5E_DEFAULT);
    return closed;
}

Datatype vlen_string_type()
{
    Datatype type{H5Tcopy(H5T_C_S1)};
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    return type;
}

bool link_exists(hid_t parent, const std::string &name) { return H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0; }

bool attr_exists(hid_t obj, const char *name) { return H5Aexists(obj, name) > 0; }

Result<Group> open_group(hid_t parent, const std::string &name)
{
    if (!link_exists(parent, name))
        return Error(Errc::not_found, "no group " + name);
    Group group{H5Gopen2(parent, name.c_str(), H5P_DEFAULT)};
    if (!group)
        return h5_error("open group " + name);
    return group;
}

Result<Group> open_or_create_group(hid_t parent, const std::string &name, bool *created)
{
    if (created)
        *created = false;
    if (link_exists(parent, name))
        return open_group(parent, name);
    Group group{H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)};
    if (!group)
        return h5_error("create group " + name);
    if (created)
        *created = true;
    return group;
}

Result<void> write_i32_attr(hid_t obj, const char *name, int32_t value)
{
    return write_scalar(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value);
}

Result<void> write_i64_attr(hid_t obj, const char *name, int64_t value)
{
    return write_scalar(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

Result<void> write_u64_attr(hid_t obj, const char *name, uint64_t value)
{
    return write_scalar(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

Result<void> write_f64_attr(hid_t obj, const char *name, double value)
{
    return write_scalar(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

Result<void> write_str_attr(hid_t obj, const char *name, const std::string &value)
{
    if (attr_exists(obj, name)) {
        auto old = read_strs_attr(obj, name);
        if (old && old->size() == 1 && old->front() == value)
            return ok();
    }
    Datatype type = vlen_string_type();
    const char *ptr = value.c_str();
    return write_scalar(obj, name, type.get(), type.get(), &ptr);
}

Result<void> write_strs_attr(hid_t obj, const char *name, const std::vector<std::string> &values)
{
    Datatype type = vlen_string_type();
    hsize_t n = values.size();
    Dataspace space{H5Screate_simple(1, &n, nullptr)};
    if (!space)
        return h5_error("create dataspace");
    std::vector<const char *> ptrs;
    ptrs.reserve(values.size());
    for (const auto &v : values)
        ptrs.push_back(v.c_str());
    return write_attr(obj, name, type.get(), space.get(), type.get(), ptrs.data());
}

Result<int64_t> read_i64_attr(hid_t obj, const char *name) { return read_scalar<int64_t>(obj, name, H5T_NATIVE_INT64); }

Result<double> read_f64_attr(hid_t obj, const char *name) { return read_scalar<double>(obj, name, H5T_NATIVE_DOUBLE); }

Result<std::vector<std::string>> read_strs_attr(hid_t obj, const char *name)
{
    Attribute attr{H5Aopen(obj, name, H5P_DEFAULT)};
    if (!attr)
        return Error(Errc::not_found, std::string("no attribute ") + name);
    Datatype file_type{H5Aget_type(attr.get())};
    Dataspace space{H5Aget_space(attr.get())};
    if (H5Tget_class(file_type.get()) != H5T_STRING)
        return Error::invalid(std::string("attribute ") + name + " is not a string");
    hssize_t n = H5Sget_simple_extent_npoints(space.get());
    if (n < 0)
        return h5_error(std::string("read attribute ") + name);
    auto count = static_cast<size_t>(n);
    Datatype mem_type{H5Tcopy(file_type.get())};
    std::vector<std::string> out;
    out.reserve(count);
    if (H5Tis_variable_str(file_type.get()) > 0) {
        std::vector<char *> ptrs(count, nullptr);
        if (H5Aread(attr.get(), mem_type.get(), ptrs.data()) < 0)
            return h5_error(std::string("read attribute ") + name);
        for (char *p : ptrs)
            out.emplace_back(p ? p : "");
        H5Dvlen_reclaim(mem_type.get(), space.get(), H5P_DEFAULT, ptrs.data());
        return out;
    }
    size_t size = H5Tget_size(file_type.get());
    std::vector<char> buf(size * count + 1, '\0');
    if (H5Aread(attr.get(), mem_type.get(), buf.data()) < 0)
        return h5_error(std::string("read attribute ") + name);
    for (size_t i = 0; i < count; ++i) {
        std::string s(buf.data() + i * size, size);
        s.erase(std::find(s.begin(), s.end(), '\0'), s.end());
        while (!s.empty() && s.back() == ' ')
            s.pop_back();
        out.push_back(std::move(s));
    }
    return out;
}

Result<std::string> read_str_attr(hid_t obj, const char *name)
{
    auto values = read_strs_attr(obj, name);
    if (!values)
        return values.error();
    if (values->size() != 1)
        return Error::invalid(std::string("attribute ") + name + " is not a scalar string");
    return std::move(values->front());
}

Result<uint64_t> dataset_rows(hid_t dataset)
{
    Dataspace space{H5Dget_space(dataset)};
    int rank = space ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 1 || rank > 2)
        return h5_error("dataset shape");
    std::array<hsize_t, 2> dims{};
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    return static_cast<uint64_t>(dims[0]);
}

Result<void> read_column(hid_t dataset, uint64_t col, const std::function<void(const double *, size_t)> &fn)
{
    constexpr hsize_t k_block = 65536;
    Dataspace file_space{H5Dget_space(dataset)};
    if (!file_space || H5Sget_simple_extent_ndims(file_space.get()) != 2)
        return Error::invalid("values dataset is not 2-D");
    std::array<hsize_t, 2> dims{};
    H5Sget_simple_extent_dims(file_space.get(), dims.data(), nullptr);
    if (col >= dims[1])
        return Error::invalid("column out of range");
    std::vector<double> buf;
    for (hsize_t row = 0; row < dims[0]; row += k_block) {
        hsize_t count = std::min(k_block, dims[0] - row);
        std::array<hsize_t, 2> start{row, col};
        std::array<hsize_t, 2> shape{count, 1};
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, shape.data(), nullptr);
        Dataspace mem_space{H5Screate_simple(1, &count, nullptr)};
        buf.resize(count);
        if (H5Dread(dataset, H5T_NATIVE_DOUBLE, mem_space.get(), file_space.get(), H5P_DEFAULT, buf.data()) < 0)
            return h5_error("read column");
        fn(buf.data(), buf.size());
    }
    return ok();
}

}  // namespace colmet::collector::hdf5
