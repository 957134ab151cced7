# Client side of node/ (included from node/CMakeLists.txt):
#   ts_client  - endpoint resolution and the leader-following blocking Client
#   ts_tsctl   - tsctl's command line as a library (tested in-process)
#   tsctl      - the command-line client
find_package(nlohmann_json 3 CONFIG REQUIRED)

add_library(ts_client STATIC client.cc endpoints.cc)
target_link_libraries(ts_client PUBLIC ts_rpc Threads::Threads)

add_library(ts_tsctl STATIC tsctl_cli.cc tsctl_format.cc tsctl_deploy.cc)
target_compile_definitions(ts_tsctl PRIVATE TS_CLIENT_VERSION_STRING="${TS_SOFTWARE_VERSION}")
target_link_libraries(ts_tsctl PUBLIC ts_client nlohmann_json::nlohmann_json)
if(TARGET CLI11::CLI11)
  target_link_libraries(ts_tsctl PRIVATE CLI11::CLI11)
endif()  # else CLI/CLI.hpp is found on the default include path (header-only)

add_executable(tsctl tsctl_main.cc)
target_link_libraries(tsctl PRIVATE ts_tsctl)

# tsagent: the simulated runtime executor of game rooms (issue 4).
add_library(ts_agent STATIC agent.cc)
target_link_libraries(ts_agent PUBLIC nlohmann_json::nlohmann_json)
target_include_directories(ts_agent PUBLIC ${PROJECT_SOURCE_DIR})
add_executable(tsagent tsagent_main.cc)
target_link_libraries(tsagent PRIVATE ts_agent ts_client)
if(TARGET CLI11::CLI11)
  target_link_libraries(tsagent PRIVATE CLI11::CLI11)
endif()
