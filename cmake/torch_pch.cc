// Anchor TU for the precompiled header target (cmake/Torch.cmake).
