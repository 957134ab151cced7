// Status and StatusOr: the error values every layer returns instead of
// throwing past its edge (docs/design/architecture.md#house-style). A
// Status must be looked at: the class is [[nodiscard]].
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "consensus/check.h"

namespace ts {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,
    kNotFound,
    kCorruption,
    kIoError,
    kNotLeader,
    kUnavailable,
    kBusy,
    kCompareFailed,
    kAborted,
    kTimeout,
    kFailedPrecondition,  // the system is not in a state that allows it (the message says which)
    kPermissionDenied,    // the caller's credentials do not allow it
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status IoError(std::string m) { return Status(Code::kIoError, std::move(m)); }
  static Status NotLeader(std::string m) { return Status(Code::kNotLeader, std::move(m)); }
  static Status Unavailable(std::string m) { return Status(Code::kUnavailable, std::move(m)); }
  static Status Busy(std::string m) { return Status(Code::kBusy, std::move(m)); }
  static Status CompareFailed(std::string m) { return Status(Code::kCompareFailed, std::move(m)); }
  static Status Aborted(std::string m) { return Status(Code::kAborted, std::move(m)); }
  static Status Timeout(std::string m) { return Status(Code::kTimeout, std::move(m)); }
  static Status FailedPrecondition(std::string m) { return Status(Code::kFailedPrecondition, std::move(m)); }
  static Status PermissionDenied(std::string m) { return Status(Code::kPermissionDenied, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

const char* StatusCodeName(Status::Code code);

inline std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

inline const char* StatusCodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk: return "OK";
    case Status::Code::kInvalidArgument: return "invalid argument";
    case Status::Code::kNotFound: return "not found";
    case Status::Code::kCorruption: return "corruption";
    case Status::Code::kIoError: return "I/O error";
    case Status::Code::kNotLeader: return "not leader";
    case Status::Code::kUnavailable: return "unavailable";
    case Status::Code::kBusy: return "busy";
    case Status::Code::kCompareFailed: return "compare failed";
    case Status::Code::kAborted: return "aborted";
    case Status::Code::kTimeout: return "timeout";
    case Status::Code::kFailedPrecondition: return "failed precondition";
    case Status::Code::kPermissionDenied: return "permission denied";
  }
  return "unknown";
}

// StatusOr<T>: a value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    TS_CHECK(!status_.ok(), "a StatusOr without a value needs an error");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() {
    TS_CHECK(ok(), status_.ToString());
    return *value_;
  }
  const T& value() const {
    TS_CHECK(ok(), status_.ToString());
    return *value_;
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ts
