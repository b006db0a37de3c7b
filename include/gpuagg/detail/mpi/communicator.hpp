#pragma once
// The MPI side of gpuagg::mpi::group_by: a private duplicate of the caller's communicator whose
// calls return their errors (thrown as mpi_error) instead of aborting, element types of any
// size, and the collective agreement on failures that keeps one rank's error from leaving the
// others blocked in a collective.

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "../../error.hpp"

namespace gpuagg::mpi {

/// An MPI call failed on this rank (the message names the call and MPI's error string).
class mpi_error : public error {
 public:
  mpi_error(int code, const std::string& what_failed) : error(what_failed + " failed: " + describe(code)), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  static std::string describe(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length)) + " (" + std::to_string(code) + ")";
  }
  int code_;
};

/// The query failed on another rank: every rank throws, so none is left waiting in a collective.
/// The failing rank itself throws its own error (e.g. invalid_argument_error for columns of
/// different lengths); the others throw this, naming that rank, its error's class and message.
class rank_failed_error : public error {
 public:
  rank_failed_error(int rank, std::string kind, const std::string& message)
      : error("gpuagg::mpi::group_by failed on rank " + std::to_string(rank) + " (" + kind + "): " + message),
        rank_(rank), kind_(std::move(kind)) {}
  /// The lowest rank that failed.
  int rank() const noexcept { return rank_; }
  /// The class of its error, e.g. "opencl_error".
  const std::string& kind() const noexcept { return kind_; }

 private:
  int rank_;
  std::string kind_;
};

namespace detail {

inline void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS) throw mpi_error(code, what);
}

/// The class of a caught error, as rank_failed_error::kind() reports it.
inline const char* error_kind(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const key_out_of_domain_error&) {
    return "key_out_of_domain_error";
  } catch (const invalid_argument_error&) {
    return "invalid_argument_error";
  } catch (const no_device_error&) {
    return "no_device_error";
  } catch (const opencl_error&) {
    return "opencl_error";
  } catch (const out_of_memory_error&) {
    return "out_of_memory_error";
  } catch (const build_error&) {
    return "build_error";
  } catch (const unsupported_error&) {
    return "unsupported_error";
  } catch (const mpi_error&) {
    return "mpi_error";
  } catch (const rank_failed_error&) {
    return "rank_failed_error";
  } catch (const error&) {
    return "error";
  } catch (const std::exception&) {
    return "std::exception";
  } catch (...) {
    return "unknown exception";
  }
}

inline std::string error_message(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}

/// A duplicate of the caller's communicator: the query's collectives never meet the caller's
/// own traffic, and its calls return errors (MPI_ERRORS_RETURN) rather than abort the job, so
/// they become typed exceptions. Freed (collectively) when the query ends.
class communicator {
 public:
  explicit communicator(MPI_Comm parent) {
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) throw invalid_argument_error("gpuagg::mpi::group_by: MPI is not initialized (call MPI_Init first)");
    check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;
  ~communicator() {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }
  MPI_Comm get() const noexcept { return comm_; }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  /// Every rank's `words` (the same count on each), gathered on every rank, rank by rank.
  std::vector<std::uint64_t> all_gather(const std::vector<std::uint64_t>& words) const {
    std::vector<std::uint64_t> all(words.size() * static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(words.data(), static_cast<int>(words.size()), MPI_UINT64_T, all.data(),
                            static_cast<int>(words.size()), MPI_UINT64_T, comm_),
              "MPI_Allgather");
    return all;
  }

  /// The agreement at the end of a phase: `status[r]` is nonzero where rank r failed. When any
  /// rank failed, every rank throws: the failing rank its own error, the others
  /// rank_failed_error with the lowest failing rank's message (broadcast from it).
  void throw_if_any_failed(const std::vector<std::uint64_t>& status, const std::exception_ptr& mine) const {
    int first = -1;
    for (int r = 0; r < size_ && first < 0; ++r) {
      if (status[static_cast<std::size_t>(r)] != 0) first = r;
    }
    if (first < 0) return;
    std::string message = rank_ == first ? std::string(error_kind(mine)) + '\n' + error_message(mine) : std::string();
    std::uint64_t length = message.size();
    check_mpi(MPI_Bcast(&length, 1, MPI_UINT64_T, first, comm_), "MPI_Bcast (an error's length)");
    message.resize(static_cast<std::size_t>(length));
    check_mpi(MPI_Bcast(message.data(), static_cast<int>(std::min<std::uint64_t>(length, INT_MAX)), MPI_CHAR, first,
                        comm_),
              "MPI_Bcast (an error's message)");
    if (mine) std::rethrow_exception(mine);
    const auto cut = message.find('\n');
    throw rank_failed_error(first, message.substr(0, cut), cut == std::string::npos ? "" : message.substr(cut + 1));
  }

  /// The agreement on one phase's outcome alone (no statistics to share with it).
  void agree(const std::exception_ptr& mine) const {
    throw_if_any_failed(all_gather({mine ? 1u : 0u}), mine);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

/// An MPI datatype of `bytes` contiguous bytes: counts and displacements then count elements,
/// not bytes, so int's range limits a message to 2^31 - 1 elements rather than bytes.
class element_type {
 public:
  explicit element_type(std::size_t bytes) {
    check_mpi(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type_), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  element_type(const element_type&) = delete;
  element_type& operator=(const element_type&) = delete;
  ~element_type() { MPI_Type_free(&type_); }
  MPI_Datatype get() const noexcept { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace detail
}  // namespace gpuagg::mpi
