x = 1  # mlsem: ignore[
y = 2  # noqa:
z = 3  # mlsem: ignore-file[,,]
# mlsem: ignore[ATT001 ATT002
