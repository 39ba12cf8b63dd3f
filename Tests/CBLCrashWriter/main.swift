print("crash writer: todo")
