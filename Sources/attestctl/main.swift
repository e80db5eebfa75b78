import Gateway
