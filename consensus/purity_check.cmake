# Fails when a source of a pure folder (consensus/, node/station/) includes a
# header of Asio, RocksDB or spdlog (or their transitive fmt), a clock, a
# random source or a thread: those layers stay free of I/O and of anything
# that would make a run depend on more than its inputs
# (docs/design/architecture.md).
# Run with -DSOURCES="a.cc b.h ..." -DLAYER=name.
separate_arguments(files UNIX_COMMAND "${SOURCES}")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"](asio|boost/asio|rocksdb/|spdlog/|fmt/)" OR
       line MATCHES "<(chrono|random|thread|ctime|time\\.h|sys/time\\.h|future|mutex)>")
      message(FATAL_ERROR "${LAYER} must not include I/O libraries, clocks, random sources or threads: ${f}: ${line}")
    endif()
  endforeach()
endforeach()
