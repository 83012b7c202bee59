"""Programs written the way people write autograd programs, ported to adcli by swapping imports."""
