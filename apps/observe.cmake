# rlswarm_observe: what a person watches a run through, with no LibTorch and
# no ZeroMQ: the TensorBoard event-file writer, the Prometheus /metrics HTTP
# server and the learning-curve plotter. Included from apps/CMakeLists.txt.
#
# scalar_log.cc and png_writer.cc are compiled in here so that the library
# (and observe_tests) builds on its own; png_writer.cc only needs the
# header-only envs::Image from envs/render.h, not the envs library.
find_package(PNG REQUIRED)
# Debian's libprotobuf-dev ships no protoc; FindProtobuf needs only the
# headers and the library, and the writer builds its message types at run time.
find_package(Protobuf REQUIRED)
# The library by path, not the protobuf::libprotobuf target: PyPI's LibTorch
# config (Caffe2's protobuf.cmake) defines that target first, without a
# library behind it, and FindProtobuf then keeps it.
set(RLSWARM_PROTOBUF_LIBS ${Protobuf_LIBRARIES})

add_library(rlswarm_observe
  ${CMAKE_CURRENT_LIST_DIR}/learning_curve_plot.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server.cc
  ${CMAKE_CURRENT_LIST_DIR}/png_writer.cc
  ${CMAKE_CURRENT_LIST_DIR}/scalar_log.cc
  ${CMAKE_CURRENT_LIST_DIR}/tensorboard_writer.cc
)
target_link_libraries(rlswarm_observe
  PUBLIC rlswarm_common
  PRIVATE Boost::headers Threads::Threads nlohmann_json::nlohmann_json PNG::PNG
          ${RLSWARM_PROTOBUF_LIBS})
target_include_directories(rlswarm_observe SYSTEM PRIVATE ${Protobuf_INCLUDE_DIRS})
rlswarm_set_warnings(rlswarm_observe)

if(RLSWARM_BUILD_TESTS)
  # The test reads the event file back through protobuf itself, decodes PNGs
  # with libpng and talks HTTP through Beast, so it links those directly.
  rlswarm_add_test(observe_tests
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/observe_test.cc
    LIBS rlswarm_observe ${RLSWARM_PROTOBUF_LIBS} PNG::PNG Boost::headers Threads::Threads)
  target_include_directories(observe_tests SYSTEM PRIVATE ${Protobuf_INCLUDE_DIRS})
endif()
