# rlswarm_launch_support: what `rlswarm launch` needs to run a swarm as local
# processes (ProcessSupervisor). Boost.Process/Asio only: no ZeroMQ, no
# LibTorch, so its tests build in seconds.
# Included from apps/CMakeLists.txt: include(launch_support.cmake)
find_package(Boost REQUIRED COMPONENTS filesystem)

add_library(rlswarm_launch_support STATIC
  ${CMAKE_CURRENT_LIST_DIR}/process_supervisor.cc
)
target_link_libraries(rlswarm_launch_support
  PUBLIC rlswarm_common
  PRIVATE Boost::filesystem Threads::Threads
)
rlswarm_set_warnings(rlswarm_launch_support)

if(RLSWARM_BUILD_TESTS)
  rlswarm_add_test(launch_support_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/process_supervisor_test.cc
    LIBS rlswarm_launch_support rlswarm_common
  )
endif()
