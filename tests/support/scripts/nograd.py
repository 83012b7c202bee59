print("no gradient here")
