s=s
