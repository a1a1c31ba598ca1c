    qr/^colmet(?:=[A-Za-z0-9_.,:;=\/+-]{1,1024})?$/, # colmet: -t colmet[=SPEC] (hooks/oar/install.sh)
