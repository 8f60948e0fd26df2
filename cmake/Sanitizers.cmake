# RLSWARM_SANITIZE=address -> AddressSanitizer + UndefinedBehaviorSanitizer
# RLSWARM_SANITIZE=thread  -> ThreadSanitizer
if(RLSWARM_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(RLSWARM_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT RLSWARM_SANITIZE STREQUAL "")
  message(FATAL_ERROR "RLSWARM_SANITIZE must be '', 'address' or 'thread', got '${RLSWARM_SANITIZE}'")
endif()
