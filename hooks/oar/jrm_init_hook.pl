        # BEGIN colmet init hook (hooks/oar/install.sh; removed by install.sh --uninstall)
        # A job submitted with "oarsub -t colmet" or "-t colmet=SPEC": start its colmet
        # sampler on this node before the job runs. colmet-job detaches the sampler
        # outside the job's cgroups (the clean kill loop cannot hit it) and returns at
        # once. The spec is user-controlled text: it goes to colmet-job as one argv
        # element of a list-form system() (no shell sees it) in "--spec=VALUE" form (it
        # cannot be read as an option), and only if it uses the spec characters.
        # Nothing here may fail the JRM: a failing JRM suspects the node.
        eval {
            my $colmet_types = $Cpuset->{types};
            if ((ref($colmet_types) eq 'HASH') and defined($colmet_types->{colmet})) {
                my $colmet_spec = $colmet_types->{colmet};
                if (ref($colmet_spec) or ($colmet_spec !~ /\A[A-Za-z0-9_.,:;=\/+-]{1,1024}\z/)) {
                    print_log(1, "colmet: the job's colmet spec holds characters other than [A-Za-z0-9_.,:;=/+-] or is too long; sampling with the site defaults");
                    $colmet_spec = 'true';
                }
                # The job's context, as the JRM gets it (colmet-job checks each item
                # and makes text safe; one argv element each, in --context=K=V form).
                my @colmet_context;
                my %colmet_given = (job_name => $Cpuset->{job_name}, project => $Cpuset->{project},
                                    time_limit_s => $Cpuset->{walltime_seconds});
                if (ref($Cpuset->{nodes}) eq 'HASH') {
                    $colmet_given{job_nodes} = scalar(keys(%{$Cpuset->{nodes}}));
                    my $colmet_cpus = 0;
                    foreach my $colmet_host (values(%{$Cpuset->{nodes}})) {
                        $colmet_cpus += scalar(@$colmet_host) if (ref($colmet_host) eq 'ARRAY');
                    }
                    $colmet_given{job_cpus} = $colmet_cpus if ($colmet_cpus > 0);
                }
                foreach my $colmet_key (sort(keys(%colmet_given))) {
                    my $colmet_value = $colmet_given{$colmet_key};
                    push(@colmet_context, "--context=$colmet_key=$colmet_value")
                        if (defined($colmet_value) and !ref($colmet_value) and $colmet_value ne '');
                }
                my @colmet_cmd = ('oardodo', @COLMET_JOB@, 'start', '--hook',
                                  '--scheduler=oar', '--job-id='.$Cpuset->{job_id}, '--user='.$Cpuset->{user},
                                  '--cgroup='.$Oardocker_node_cg_path.$Cpuset_path_job,
                                  '--spec='.$colmet_spec, @colmet_context, @COLMET_START_ARGS@);
                print_log(3, "colmet: ".join(' ', @colmet_cmd));
                my $colmet_rc = system(@colmet_cmd);
                print_log(1, "colmet: colmet-job start returned $colmet_rc (ignored; see its log file)") if ($colmet_rc != 0);
            }
            1;
        } or print_log(1, "colmet: init hook failed (ignored): $@");
        # END colmet init hook
