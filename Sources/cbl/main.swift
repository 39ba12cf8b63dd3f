print("cbl")
