        # BEGIN colmet clean hook (hooks/oar/install.sh; removed by install.sh --uninstall)
        # Stop the job's colmet sampler before the kill loop below: it takes its final
        # sample while the job's cgroups still exist, sends the job end to the collector
        # and removes the perf_event cgroup only if colmet-job created it. Bounded by
        # colmet-job's --timeout; never fails the JRM.
        eval {
            my $colmet_types = $Cpuset->{types};
            if ((ref($colmet_types) eq 'HASH') and defined($colmet_types->{colmet})) {
                my @colmet_cmd = ('oardodo', @COLMET_JOB@, 'stop', '--hook',
                                  '--job-id='.$Cpuset->{job_id}, @COLMET_STOP_ARGS@);
                print_log(3, "colmet: ".join(' ', @colmet_cmd));
                my $colmet_rc = system(@colmet_cmd);
                print_log(1, "colmet: colmet-job stop returned $colmet_rc (ignored; see its log file)") if ($colmet_rc != 0);
            }
            1;
        } or print_log(1, "colmet: clean hook failed (ignored): $@");
        # END colmet clean hook
