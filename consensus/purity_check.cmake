# Fails when a consensus/ source includes a header of Asio, RocksDB or spdlog
# (or their transitive fmt): the core must stay free of I/O (DESIGN.md s.2).
separate_arguments(files UNIX_COMMAND "${SOURCES}")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    if(line MATCHES "[<\"](asio|boost/asio|rocksdb/|spdlog/|fmt/)")
      message(FATAL_ERROR "consensus/ must not include I/O libraries: ${f}: ${line}")
    endif()
  endforeach()
endforeach()
