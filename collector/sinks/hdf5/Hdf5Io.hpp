// Small helpers over the HDF5 C API: errors, safe object names, groups,
// attributes (scalars and 1-D string arrays) and column reads. Every hid_t
// they create is owned by a Handle from Hdf5Handle.hpp.
#pragma once

#include "collector/sinks/hdf5/Hdf5Handle.hpp"
#include "common/result.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace colmet::collector::hdf5 {

// "<what>: <HDF5 API function and its message>: <most specific cause>" from
// HDF5's current error stack (e.g. "... errno = 28, No space left on device").
Error h5_error(const std::string &what);

// Name of a file or HDF5 object derived from an untrusted id (job, host,
// backend, meta key): sanitize_name(id) when that leaves the id unchanged,
// else sanitize_name(id) + "-" + 16 hex digits of a 64-bit FNV-1a hash of the
// id, so two different ids never share a name. Never contains '/', never
// starts with '.', at most k_max_id_length + 17 bytes.
std::string object_name(std::string_view id);

// File access properties of every file colmet opens: sec2 driver, default
// (earliest) library version bounds, and HDF5 file locking off, so that a
// reader (h5py, h5dump) of a live file never makes the collector fail to
// open it, and vice versa.
PropList file_access_plist();

// Close a file that HDF5 failed to write, without writing anything more to
// it: its descriptor is first replaced by an anonymous memory file
// (memfd_create + dup3), so that what H5Fclose flushes (metadata that may
// describe writes that never happened) goes nowhere and cannot fail for want
// of space. A failed H5Fclose leaves HDF5 holding a freed file that it
// closes again at exit (a double free); this never lets it fail. Returns
// false when H5Fclose still failed.
bool close_without_writing(File &file);

// A UTF-8 variable-length string type (what h5py reads as str).
Datatype vlen_string_type();

bool link_exists(hid_t parent, const std::string &name);
bool attr_exists(hid_t obj, const char *name);
Result<Group> open_group(hid_t parent, const std::string &name);
Result<Group> open_or_create_group(hid_t parent, const std::string &name, bool *created = nullptr);

// Attribute writers: create the attribute, or overwrite it when it exists
// (an attribute of another type or shape is deleted and recreated).
Result<void> write_i32_attr(hid_t obj, const char *name, int32_t value);
Result<void> write_i64_attr(hid_t obj, const char *name, int64_t value);
Result<void> write_u64_attr(hid_t obj, const char *name, uint64_t value);
Result<void> write_f64_attr(hid_t obj, const char *name, double value);
// Scalar variable-length UTF-8 string; a no-op when the value is unchanged.
Result<void> write_str_attr(hid_t obj, const char *name, const std::string &value);
// 1-D array of variable-length UTF-8 strings (h5py: numpy array of str).
Result<void> write_strs_attr(hid_t obj, const char *name, const std::vector<std::string> &values);

// Attribute readers; numeric readers convert from any stored numeric type.
Result<int64_t> read_i64_attr(hid_t obj, const char *name);
Result<double> read_f64_attr(hid_t obj, const char *name);
// Variable- or fixed-length strings; a scalar gives one element.
Result<std::vector<std::string>> read_strs_attr(hid_t obj, const char *name);
Result<std::string> read_str_attr(hid_t obj, const char *name);

// Number of rows (first dimension) of a dataset.
Result<uint64_t> dataset_rows(hid_t dataset);

// Read column `col` of a 2-D float64 dataset from row 0 to the end in blocks;
// fn(values, count) is called once per block.
Result<void> read_column(hid_t dataset, uint64_t col, const std::function<void(const double *, size_t)> &fn);

}  // namespace colmet::collector::hdf5
