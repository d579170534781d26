"""Pure readers of what the compiler and the profiler made: SASS, Nsight Compute output, the static scan of a
kernel's source, and the comparison of two versions. Nothing here starts a worker."""
