print("benchmarks: todo")
