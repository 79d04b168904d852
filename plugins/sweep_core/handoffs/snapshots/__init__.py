"""The Daytona snapshot cleanup (sweep_snapshots): ``plan`` which approved names go, ``remote`` the
list and delete scripts, ``usecase`` the steps."""
