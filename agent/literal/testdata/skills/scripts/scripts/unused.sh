echo unused
