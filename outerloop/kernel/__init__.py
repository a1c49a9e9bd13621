"""The tick's own modules: observe, plan (lanes), act (executor), commit (tick)."""
