"""The output directory's crash-safe state: the lock file (:mod:`.lock`), the plan against it (:mod:`.plan`), the
apply that writes it (:mod:`.apply`) and the journal that lets a killed apply finish (:mod:`.journal`). Knows
artifacts and paths only: imports nothing above :mod:`fabricgen.core`."""
