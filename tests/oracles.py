"""Reference tables shared by several test modules (independent sources, not computed by puffer).

Importable as ``oracles`` because tests/conftest.py puts tests/ on sys.path (pytest rootdir conftest)."""

# Seeman, Reimherr, Slavković 2024 (formal privacy for partially private data), Figure 4:
# W_inf between 1 + Bin(n-1, z1) and Bin(n-1, z0), rows z0, columns z1, exact rational arithmetic
Z0 = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
Z1 = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
FIG4 = {
    10: [[10] * 6, [6, 7, 7, 8, 9, 10], [5, 5, 6, 7, 8, 10], [3, 4, 5, 6, 7, 10], [2, 3, 4, 5, 7, 10],
         [1, 2, 3, 5, 6, 10]],
    25: [[25] * 6, [13, 15, 17, 19, 21, 25], [9, 12, 14, 16, 19, 25], [7, 9, 11, 14, 17, 25],
         [4, 6, 9, 12, 15, 25], [1, 4, 7, 9, 13, 25]],
    50: [[50] * 6, [25, 29, 33, 37, 41, 50], [18, 22, 26, 31, 37, 50], [12, 16, 21, 26, 33, 50],
         [6, 11, 16, 22, 29, 50], [1, 6, 12, 18, 25, 50]],
    100: [[100] * 6, [49, 56, 64, 72, 81, 100], [34, 43, 52, 61, 72, 100], [22, 32, 41, 52, 64, 100],
          [12, 21, 32, 43, 56, 100], [1, 12, 22, 34, 49, 100]],
}
