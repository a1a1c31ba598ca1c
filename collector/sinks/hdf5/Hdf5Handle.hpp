// Move-only RAII owners for HDF5 identifiers (hid_t). Each type closes its
// identifier with the matching H5?close function; an invalid id (< 0) is
// never closed, so a failed H5?create/H5?open can be wrapped unchecked and
// tested with valid().
#pragma once

#include <hdf5.h>

#include <utility>

namespace colmet::collector::hdf5 {

template <herr_t (*CloseFn)(hid_t)>
class Handle {
public:
    Handle() = default;
    explicit Handle(hid_t id) : m_id(id) {}
    ~Handle() { reset(); }

    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    Handle(Handle &&other) noexcept : m_id(std::exchange(other.m_id, H5I_INVALID_HID)) {}
    Handle &operator=(Handle &&other) noexcept
    {
        if (this != &other) {
            reset();
            m_id = std::exchange(other.m_id, H5I_INVALID_HID);
        }
        return *this;
    }

    hid_t get() const { return m_id; }
    bool valid() const { return m_id >= 0; }
    explicit operator bool() const { return valid(); }

    // Close now; returns false when H5?close reported an error.
    bool reset()
    {
        bool ok = true;
        if (m_id >= 0)
            ok = CloseFn(m_id) >= 0;
        m_id = H5I_INVALID_HID;
        return ok;
    }

private:
    hid_t m_id = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using PropList = Handle<H5Pclose>;
using Attribute = Handle<H5Aclose>;

// Turns off HDF5's automatic printing of its error stack to stderr for the
// lifetime of the object (errors are read with last_error() and logged), and
// restores the previous handler afterwards.
class ErrorSilencer {
public:
    ErrorSilencer() noexcept
    {
        H5Eget_auto2(H5E_DEFAULT, &m_func, &m_data);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    ~ErrorSilencer() { H5Eset_auto2(H5E_DEFAULT, m_func, m_data); }
    ErrorSilencer(const ErrorSilencer &) = delete;
    ErrorSilencer &operator=(const ErrorSilencer &) = delete;

private:
    H5E_auto2_t m_func = nullptr;
    void *m_data = nullptr;
};

}  // namespace colmet::collector::hdf5
