print("fetch")
