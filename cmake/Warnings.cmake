# Warnings for rlswarm's own targets (third-party headers are included as SYSTEM).
function(rlswarm_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                           -Wcast-align -Wunused -Woverloaded-virtual)
endfunction()
